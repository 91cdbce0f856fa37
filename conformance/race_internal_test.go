//go:build race

package conformance

// raceEnabled reports whether this test binary was built with -race.
const raceEnabled = true
