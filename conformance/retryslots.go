package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// testRetryRecountsSlots fills a partition to one free slot, holding a
// stored key x, and pins a batch [x, n], n a new key of the partition,
// just after its clock sample. A check of x runs meanwhile: a locking
// store keeps it waiting for the batch's lock; an optimistic store lets it
// write, and the batch's conditional write then finds x changed and starts
// again. Its retry is pinned after its new sample in turn, while a check
// of another new key m of the partition takes the last slot. Exactly one
// of n and m takes it, whatever the store's protocol: a retry judges its
// new keys against the occupancy its conditional write is sure of, not
// against what an earlier attempt, or its own read before the sample,
// counted (ports.Store: on a conflict, start again from the read of every
// key and of whatever the capacity bound depends on, and write only if
// nothing read has changed since).
func testRetryRecountsSlots(t *testing.T, f *fixture) {
	const g = "waits: an admission that starts again after a conflict counts its new key's free slot as of its write, " +
		"not as of an earlier attempt or its own read"
	const limit = 3
	p := f.policy(limit, window)
	part := f.somePart(p)
	x := f.keyIn(p, part)
	f.allow(f.check(p, x), limit-1, g)
	f.admitNew(p, part, f.opts.Capacity-2, g+" (filling the partition to one free slot)")
	stored := occupancy{part: f.opts.Capacity - 1}
	f.requireOccupancy(stored, g+" (one free slot left)")
	n, m := f.keyIn(p, part), f.keyIn(p, part)
	batch := []domain.Check{f.check(p, x), f.check(p, n)}
	rs, held, again := f.pinnedRetryRace(g, f.batchOp(batch), f.checkOp(f.check(p, x), f.path), f.checkOp(f.check(p, m), f.path))
	how := "a store that reads no ManualClock ran them freely"
	switch {
	case again:
		how = "the batch pinned after its clock sample while x was checked, and its retry pinned after its next sample while m was"
	case held:
		how = "the batch pinned after its clock sample while x was checked; it sampled no more before m was"
	}
	f.log.add("race: batch %s, a check of x and a check of new key m of partition %d, the partition one slot short of full, "+
		"%s → batch %s; x %s; m %s", f.log.batch(batch), part, how, describeResult(rs[0]), describeResult(rs[1]), describeResult(rs[2]))
	for i, r := range rs {
		require.NoError(t, r.err, "%s: the store failed a valid check or batch (operation %d of 3)", g, i+1)
	}
	require.Equal(t, domain.Allowed, rs[1].outcome, "%s: the check of stored key x is within its limit, got %s (%s)", g, rs[1].outcome, rs[1].reason)
	f.requireLastSlotTakenOnce(g, p, part, stored, f.opts.Capacity, x, limit, rs[0], rs[2], "x counted once by its checks and once by the batch when it was admitted")
}

// pinnedRetryRace runs first pinned just after its clock sample, then
// second to its end (or until it waits in the store), and releases first.
// If first samples the clock again (an optimistic store starting again
// after a conflict), that sample is pinned in turn while third runs to its
// end or waits; otherwise third runs once first has finished. It returns
// the three results, whether first was pinned, and whether it was pinned
// again. A store that reads no ManualClock runs the three freely.
func (f *fixture) pinnedRetryRace(guarantee string, first, second, third raceOp) (rs [3]result, held, again bool) {
	f.t.Helper()
	s := newSchedule()
	defer s.end()
	p1, p2 := newPin(), newPin()
	p1.next = p2
	defer p1.free()
	defer p2.free()
	done := [3]chan result{make(chan result, 1), make(chan result, 1), make(chan result, 1)}
	members := make(chan *member, 1)
	start := func(i int, m *member, op raceOp) {
		go func() {
			m = s.add(m)
			members <- m
			m.enter()
			r := op(f.ctx)
			m.leave()
			m.finish()
			done[i] <- r
		}()
	}
	got := [3]bool{}
	receive := func(i int) {
		select {
		case rs[i] = <-done[i]:
			got[i] = true
		case <-time.After(callBound):
			require.FailNow(f.t, guarantee, "operation %d of 3 did not finish in %v: the store is deadlocked or stalled", i+1, callBound)
		}
	}
	start(0, &member{name: "first", pin: p1}, first)
	m1 := <-members
	select {
	case <-p1.sampled:
		held = true
	case rs[0] = <-done[0]:
		got[0] = true
	case <-time.After(callBound):
		require.FailNow(f.t, guarantee, "the first admission neither read the clock nor finished in %v: the store is stalled", callBound)
	}
	start(1, &member{name: "second", free: true}, second)
	m2 := <-members
	if held {
		f.waitBlockedOrDone(s, m2)
		p1.free()
		f.waitParkedOrDone(s, m1, p2.sampled)
		select {
		case <-p2.sampled:
			again = true
		default:
		}
		if !again && !m1.done.Load() {
			// Parked in the store, waiting for second (a store whose
			// single-key check holds a lock the batch needs): let them
			// both finish before third.
			p2.free()
		}
		if !again {
			for i := range 2 {
				if !got[i] {
					receive(i)
				}
			}
		}
	}
	start(2, &member{name: "third", free: true}, third)
	m3 := <-members
	if again {
		f.waitBlockedOrDone(s, m3)
		p2.free()
	}
	for i := range 3 {
		if !got[i] {
			receive(i)
		}
	}
	return rs, held, again
}
