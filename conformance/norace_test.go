//go:build !race

package conformance_test

// raceEnabled: see race_test.go.
const raceEnabled = false
