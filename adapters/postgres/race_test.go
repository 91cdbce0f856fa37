//go:build race

package postgres_test

// raceEnabled reports whether this test binary was built with -race.
const raceEnabled = true
