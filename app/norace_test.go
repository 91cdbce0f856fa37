//go:build !race

package app_test

// raceEnabled: see race_test.go.
const raceEnabled = false
