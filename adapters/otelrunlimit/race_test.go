//go:build race

package otelrunlimit_test

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts vary under it.
const raceEnabled = true
