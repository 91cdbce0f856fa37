package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// spreadScenario checks a batch with more new keys than one partition
// holds, spread over partitions so that none gets more than its bound: it
// fits, and is admitted whole. A store that measures a batch against one
// partition's bound (or splits a batch it thinks too large) refuses a
// batch it can hold. Only a batch that puts more keys on one partition
// than that partition holds may be refused as a structural error.
func spreadScenario() scenario {
	return scenario{name: "spread", cases: []testCase{
		{name: "batch_larger_than_a_partition_spread_over_partitions_is_admitted", opts: spreadOptions, run: testSpreadBatch},
	}}
}

// spreadOptions give partitions of two slots and batches of up to eight
// keys.
var spreadOptions = Options{Capacity: 2, MaxBatchSize: 8}

func testSpreadBatch(t *testing.T, f *fixture) {
	const g = "spread: a batch with more new keys than one partition holds, none of its partitions getting more than " +
		"its bound, is admitted whole"
	if f.parts == 1 {
		f.skip("spread: the store has one capacity partition")
	}
	p := f.policy(1, window)
	c := f.opts.Capacity
	parts := []int{f.somePart(p)}
	for len(parts) < min(f.parts, f.opts.MaxBatchSize/c) {
		parts = append(parts, f.otherPart(p, parts...))
	}
	var checks []domain.Check
	want := occupancy{}
	for _, part := range parts {
		for _, k := range f.keysIn(p, part, c) {
			checks = append(checks, f.check(p, k))
		}
		want[part] = c
	}
	rem := f.admitAllowed(checks, g)
	require.Equal(t, make([]int64, len(checks)), rem, g)
	f.requireOccupancy(want, g+" (every partition the batch touched is full)")
	f.admitDenied([]domain.Check{f.check(p, f.keyIn(p, parts[0]))}, 0, domain.StorageCapacity, g+
		" (the batch filled its partitions)")
}
