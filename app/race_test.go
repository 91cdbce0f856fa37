//go:build race

package app_test

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts of pooled paths mean nothing.
const raceEnabled = true
