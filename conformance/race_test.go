//go:build race

package conformance_test

// raceEnabled reports whether this test binary was built with -race.
const raceEnabled = true
