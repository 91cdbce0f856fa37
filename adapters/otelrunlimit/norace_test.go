//go:build !race

package otelrunlimit_test

// raceEnabled: see race_test.go.
const raceEnabled = false
