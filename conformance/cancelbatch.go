package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// testCancelledBatch is testCancelledAdmission for a batch of new keys in
// two partitions (where the store has two): its context is cancelled just
// after the batch samples its clock, with every lock held. The store may
// finish the batch or give up, but whatever it answers, the batch stays
// all-or-nothing and keeps no slot it did not fill:
//
//   - a store that checks its context between writes (between keys, or
//     between partitions) and gives up there has written some keys of the
//     batch, and must not say that nothing was consumed;
//   - a store that claims a slot for each new key before it decides, and
//     gives up on the cancellation without giving the claims back, has
//     consumed nothing but keeps slots no key fills, and later new keys of
//     those partitions are refused while the partition has room.
//
// So after the race every key of the batch has been counted the same
// number of times (once, or not at all when the error says nothing was
// consumed), and every partition still takes exactly Capacity counters.
func testCancelledBatch(t *testing.T, f *fixture) {
	const g = "context: a batch whose context is cancelled while it runs stays all-or-nothing, never says nothing was " +
		"consumed when a key was, and keeps no slot"
	const limit = 3
	p := f.policy(limit, window)
	p1 := f.somePart(p)
	parts := []int{p1, p1, p1}
	if p2 := f.otherPart(p, p1); p2 >= 0 {
		parts = []int{p1, p2, p1, p2}
	}
	ks := make([]domain.SubjectKey, len(parts))
	checks := make([]domain.Check, len(parts))
	for i, q := range parts {
		ks[i] = f.keyIn(p, q)
		checks[i] = f.check(p, ks[i])
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	first := func(context.Context) result { return f.batchOp(checks)(ctx) }
	nothing := func(context.Context) result { return result{} }
	r, _, held := f.pinnedRace(g, first, cancel, nothing)
	how := "a store that reads no ManualClock ran the batch to its end before the cancellation"
	if held {
		how = "the batch pinned just after its clock sample"
	}
	f.log.add("race: batch %s via Admit, %s, while its context was cancelled → %s", f.log.batch(checks), how, describeResult(r))
	var pe *panicError
	require.False(t, errors.As(r.err, &pe), "%s: the store panicked: %v", g, r.err)
	unconsumed := r.err != nil && !ports.MayHaveConsumedQuota(r.err)
	if r.err == nil {
		require.Equal(t, domain.Allowed, r.outcome, "%s: a batch of new keys within the limit and the free slots, got %s (%s)",
			g, r.outcome, r.reason)
	}
	// Each key once more: the remaining units say how often it was counted.
	remaining := make([]int64, len(ks))
	for i, c := range checks {
		d := f.decide(c, g)
		a, ok := d.Allowance()
		require.True(t, ok, "%s: key %d of the batch is within its limit, got %s", g, i+1, describe(d))
		remaining[i] = a.Remaining
	}
	switch {
	case r.err == nil:
		for i, rem := range remaining {
			require.Equal(t, int64(limit-2), rem, "%s: the batch was allowed, so key %d of %d was counted by it", g, i+1, len(ks))
		}
	case unconsumed:
		for i, rem := range remaining {
			require.Equal(t, int64(limit-1), rem, "%s: the store answered an error saying nothing was consumed (%v), "+
				"yet key %d of %d was counted: it wrote part of the batch before it gave up", g, r.err, i+1, len(ks))
		}
	default:
		for i, rem := range remaining[1:] {
			require.Equal(t, remaining[0], rem, "%s: the batch failed with an error that may have consumed (%v), "+
				"but then it consumed for every key or for none: key 1 and key %d were counted differently", g, r.err, i+2)
		}
	}
	// Every key is stored now; the rest of each partition must take new keys.
	want := occupancy{}
	for _, q := range parts {
		want[q]++
	}
	for _, q := range []int{parts[0], parts[1]} {
		if want[q] == f.opts.Capacity {
			continue
		}
		n := f.opts.Capacity - want[q]
		f.admitNew(p, q, n, fmt.Sprintf("%s (partition %d holds the batch's %d keys, so it has room for %d more: a slot "+
			"claimed by the cancelled admission was not given back)", g, q, want[q], n))
		want[q] += n
	}
	f.requireOccupancy(want, g)
	f.deny(f.check(p, f.keyIn(p, parts[0])), domain.StorageCapacity, g+" (the partition is full)")
}
