//go:build !race

package conformance

// raceEnabled: see race_internal_test.go.
const raceEnabled = false
