package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

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
		{name: "partitions_agree_with_partition_of", single: true, run: testStatsPartitions},
		{name: "a_report_is_a_snapshot", run: testStatsAreSnapshots},
		{name: "entries_agree_with_headroom_after_a_check", single: true, opts: capacityOptions, run: testStatsEntriesAgreeWithHeadroom},
	}}
}

func testStatsOccupancy(t *testing.T, f *fixture) {
	const g = "stats: Stats reports the capacity asked for, and counts stored counters in their partitions"
	if _, ok := f.inst.Store.(ports.StatsReporter); !ok {
		f.skip("stats: the store does not implement ports.StatsReporter")
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

// testStatsPartitions admits new keys one at a time and checks that each
// takes its slot in the partition Instance.PartitionOf names. Every
// capacity case relies on that mapping; when it is wrong, this case says
// so plainly.
func testStatsPartitions(t *testing.T, f *fixture) {
	const g = "stats: each new key takes a slot in the partition Instance.PartitionOf names"
	if f.parts == 1 {
		f.skip("stats: the store has one capacity partition")
	}
	before, ok := f.stats()
	if !ok {
		f.skip("stats: the store does not implement ports.StatsReporter")
	}
	p := f.policy(1, window)
	// The keys land in partitions 0, 1, 2, … in turn, not where chance
	// puts them: with random keys a store reporting the headroom in
	// another order (most free first, say) passed whenever the keys
	// happened to fill the partitions in that order.
	for i := range 5 {
		want := i % f.parts
		k := f.keyIn(p, want)
		f.allow(f.check(p, k), 0, g)
		after, _ := f.stats()
		var took []int
		for i := range min(len(after.Headroom), len(before.Headroom)) {
			if after.Headroom[i] != before.Headroom[i] {
				took = append(took, i)
			}
		}
		require.Equal(t, []int{want}, took,
			"%s: PartitionOf says the new key lands in partition %d, but Stats.Headroom changed in %v: "+
				"the harness's PartitionOf, or the store's own mapping or Stats, is wrong", g, want, took)
		before = after
	}
}
