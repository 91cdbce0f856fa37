package conformance

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/ports"
)

// testStatsAreSnapshots keeps a Stats report across an admission and a
// second report: the first report is the caller's own copy, so neither
// changes it, and a caller that writes into a report changes nothing the
// store reports next. A store that hands out the headroom slice it keeps
// writing, or one buffer it refills on every call, passes every case that
// reads each report at once, on one partition (where the slice has one
// element) as on several.
func testStatsAreSnapshots(t *testing.T, f *fixture) {
	const g = "stats: a Stats report is the caller's snapshot: later admissions and reports leave it as it was, and " +
		"writing into it changes nothing in the store"
	if _, ok := f.inst.Store.(ports.StatsReporter); !ok {
		f.skip("stats: the store does not implement ports.StatsReporter")
	}
	p := f.policy(1, window)
	first, _ := f.stats()
	kept := slices.Clone(first.Headroom)
	k := f.key()
	f.allow(f.check(p, k), 0, g)
	second, _ := f.stats()
	require.Equal(t, kept, first.Headroom, "%s: the report taken before the admission changed under its caller (the store "+
		"returned a headroom slice it keeps writing, or reuses for the next report: return a copy)", g)
	want := occupancy{f.partOf(p, k): 1}
	for i := range second.Headroom {
		second.Headroom[i] = -1
	}
	f.requireOccupancy(want, g+" (after the caller overwrote the previous report's headroom)")
}
