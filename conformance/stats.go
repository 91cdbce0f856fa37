package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// statsScenario checks [ports.StatsReporter] on stores that offer it: the
// capacity matches the options, and entries and headroom follow admissions
// but not denials.
func statsScenario() scenario {
	return scenario{name: "stats", cases: []testCase{
		{name: "occupancy_follows_admissions", run: testStatsOccupancy},
	}}
}

func testStatsOccupancy(t *testing.T, f *fixture) {
	const g = "stats: Stats reports the capacity asked for, and counts stored counters"
	if _, ok := f.inst.Store.(ports.StatsReporter); !ok {
		t.Skip("stats: the store does not implement ports.StatsReporter")
	}
	s, _ := f.stats()
	requireStats(t, s, f.opts, 0, g+" (a fresh store)")

	p := f.policy(1, window)
	ks := f.keys(5)
	for _, k := range ks {
		f.allow(f.check(p, k), 0, g)
	}
	s, _ = f.stats()
	requireStats(t, s, f.opts, int64(len(ks)), g+" (after admitting new keys)")

	f.allow(f.check(f.policy(2, window), ks[0]), 1, g)
	f.deny(f.check(p, ks[1]), domain.QuotaExhausted, g)
	s, _ = f.stats()
	requireStats(t, s, f.opts, int64(len(ks))+1, g+" (a new counter counts, a denial does not)")
}

func requireStats(t *testing.T, s ports.Stats, opts Options, entries int64, g string) {
	t.Helper()
	require.Positive(t, s.Shards, "%s: Stats.Shards", g)
	require.Len(t, s.Headroom, s.Shards, "%s: one Stats.Headroom entry per partition", g)
	require.Equal(t, int64(s.Shards)*int64(opts.Capacity), s.Capacity,
		"%s: Stats.Capacity is Options.Capacity in each of Stats.Shards partitions", g)
	require.Equal(t, entries, s.Entries, "%s: Stats.Entries", g)
	var free int64
	for i, h := range s.Headroom {
		require.True(t, h >= 0 && h <= int64(opts.Capacity),
			"%s: partition %d has headroom %d outside 0..%d", g, i, h, opts.Capacity)
		free += h
	}
	require.Equal(t, s.Capacity-s.Entries, free, "%s: the headroom of all partitions adds up to capacity minus entries", g)
}
