package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// testStatsEntriesAgreeWithHeadroom fills a partition, lets every counter
// end and renews one of them, so that a store which removes a few expired
// counters on each check (as the memory store does) may have removed some
// of the others on the way, and one that does not keeps them all. However
// many it removed, every counter it still stores holds a slot, so
// Stats.Entries is Stats.Capacity less the headroom of every partition. A
// store that counts its entries as of the latest admission's time, leaving
// out the expired counters it has not yet removed, or that drops them from
// its map while reading Stats without freeing their slots, reports fewer
// entries than the slots it holds.
func testStatsEntriesAgreeWithHeadroom(t *testing.T, f *fixture) {
	const g = "stats: Stats.Entries counts every stored counter, expired ones included, so it is Stats.Capacity less " +
		"the headroom of every partition"
	if _, ok := f.stats(); !ok {
		f.skip("stats: the store does not implement ports.StatsReporter")
	}
	p := f.policy(2, window)
	part := f.somePart(p)
	c := f.opts.Capacity
	held := f.fillPartition(p, part, g)
	f.advance(window)
	f.allow(f.check(p, held[0]), 1, g+" (an ended counter renewed in its own slot)")
	for range 2 {
		s, _ := f.stats()
		require.Len(t, s.Headroom, f.parts, "%s: one Stats.Headroom entry per partition", g)
		free := int64(0)
		for _, h := range s.Headroom {
			free += h
		}
		require.Equal(t, s.Capacity-free, s.Entries, "%s: the partition's %d slots held less the ones freed by "+
			"any expired counter removed on the way; the store reports %d entries and %d free slots in all",
			g, c, s.Entries, free)
		require.True(t, s.Headroom[part] >= 0 && s.Headroom[part] < int64(c),
			"%s: the partition holds at least the renewed counter, headroom %d of %d", g, s.Headroom[part], c)
	}
}
