package conformance

import (
	"fmt"
	"maps"
	"slices"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// Capacity is bounded per partition, so the suite aims every key of a
// capacity case at a partition it chose, using [Instance.PartitionOf]: the
// counts are then exact on a store with any number of partitions, and a
// case never depends on where random keys happen to land.

// partOf returns the partition of p's counter for k.
func (f *fixture) partOf(p domain.Policy, k domain.SubjectKey) int {
	f.t.Helper()
	if f.parts == 1 {
		return 0
	}
	i := f.inst.PartitionOf(domain.NewCounterKey(p.Fingerprint(), k))
	require.True(f.t, i >= 0 && i < f.parts, "harness: PartitionOf returned %d for a store with %d partitions", i, f.parts)
	return i
}

// somePart returns a random partition: the one a random key lands in.
func (f *fixture) somePart(p domain.Policy) int {
	return f.partOf(p, randomKey())
}

// otherPart returns a random partition other than those excluded, or -1
// when the store has no other.
func (f *fixture) otherPart(p domain.Policy, exclude ...int) int {
	if f.parts <= len(exclude) {
		return -1
	}
	for {
		if q := f.somePart(p); !slices.Contains(exclude, q) {
			return q
		}
	}
}

// keyIn returns a fresh random key whose counter under p lands in
// partition part.
func (f *fixture) keyIn(p domain.Policy, part int) domain.SubjectKey {
	f.t.Helper()
	// A uniform partition function takes about f.parts tries; the bound
	// only stops a PartitionOf that never returns part.
	for range 1000 * f.parts {
		k := randomKey()
		if f.partOf(p, k) == part {
			f.log.nameKey(k, part, f.parts)
			return k
		}
	}
	require.FailNow(f.t, "harness: PartitionOf", "no random key landed in partition %d of %d", part, f.parts)
	return domain.SubjectKey{}
}

func (f *fixture) keysIn(p domain.Policy, part, n int) []domain.SubjectKey {
	ks := make([]domain.SubjectKey, n)
	for i := range ks {
		ks[i] = f.keyIn(p, part)
	}
	return ks
}

// fillPartition admits Capacity new keys of p in partition part, one check
// each, and returns them. It does not check that the partition is now
// full; the caller does, with the guarantee it is about.
func (f *fixture) fillPartition(p domain.Policy, part int, guarantee string) []domain.SubjectKey {
	f.t.Helper()
	return f.admitNew(p, part, f.opts.Capacity, guarantee)
}

// admitNew admits n new keys of p in partition part, one check each, and
// returns them.
func (f *fixture) admitNew(p domain.Policy, part, n int, guarantee string) []domain.SubjectKey {
	f.t.Helper()
	ks := f.keysIn(p, part, n)
	for i, k := range ks {
		d := f.decide(f.check(p, k), guarantee)
		_, ok := d.Allowance()
		require.True(f.t, ok, "%s: partition %d holds %d of its %d counters, so new key %d must be admitted, got %s",
			guarantee, part, i, f.opts.Capacity, i+1, describe(d))
	}
	return ks
}

// occupancy is how many counters the case expects each partition to hold,
// by partition; partitions it does not name hold none.
type occupancy map[int]int

// requireOccupancy checks Stats, when the store reports it, against the
// counters the case stored: the entries in all, and the headroom of every
// partition.
func (f *fixture) requireOccupancy(want occupancy, guarantee string) {
	f.t.Helper()
	s, ok := f.stats()
	if !ok {
		return
	}
	total := 0
	for _, n := range want {
		total += n
	}
	require.Equal(f.t, f.parts, s.Shards, "%s: Stats.Shards", guarantee)
	require.Len(f.t, s.Headroom, f.parts, "%s: one Stats.Headroom entry per partition", guarantee)
	require.Equal(f.t, int64(f.parts)*int64(f.opts.Capacity), s.Capacity,
		"%s: Stats.Capacity is Options.Capacity in each of Stats.Shards partitions", guarantee)
	require.Equal(f.t, int64(total), s.Entries, "%s: Stats.Entries counts every stored counter (%s)", guarantee, want)
	for i, h := range s.Headroom {
		require.Equal(f.t, int64(f.opts.Capacity-want[i]), h,
			"%s: Stats.Headroom[%d] is the partition's free slots: Capacity %d less the %d counters stored there",
			guarantee, i, f.opts.Capacity, want[i])
	}
}

func (o occupancy) String() string {
	parts := slices.Sorted(maps.Keys(o))
	s := ""
	for _, p := range parts {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%d in partition %d", o[p], p)
	}
	if s == "" {
		return "none"
	}
	return s
}
