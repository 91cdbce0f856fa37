package conformance

import (
	"testing"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// statsScenario checks [ports.StatsReporter] on stores that offer it: the
// capacity matches the options, and entries and each partition's headroom
// follow the counters stored, not the denials. (The capacity cases check
// Stats after every step too.)
func statsScenario() scenario {
	return scenario{name: "stats", cases: []testCase{
		{name: "occupancy_follows_admissions", single: true, run: testStatsOccupancy},
	}}
}

func testStatsOccupancy(t *testing.T, f *fixture) {
	const g = "stats: Stats reports the capacity asked for, and counts stored counters in their partitions"
	if _, ok := f.inst.Store.(ports.StatsReporter); !ok {
		t.Skip("stats: the store does not implement ports.StatsReporter")
	}
	f.requireOccupancy(occupancy{}, g+" (a fresh store)")

	p := f.policy(1, window)
	want := occupancy{}
	ks := f.keys(5)
	for _, k := range ks {
		f.allow(f.check(p, k), 0, g)
		want[f.partOf(p, k)]++
	}
	f.requireOccupancy(want, g+" (after admitting new keys)")

	q := f.policy(2, window)
	f.allow(f.check(q, ks[0]), 1, g)
	want[f.partOf(q, ks[0])]++
	f.deny(f.check(p, ks[1]), domain.QuotaExhausted, g)
	f.requireOccupancy(want, g+" (a new counter counts, a denial does not)")
}
