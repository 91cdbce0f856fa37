//go:build !race

package postgres_test

// raceEnabled: see race_test.go.
const raceEnabled = false
