package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// lockWaitsScenario checks an admission whose context is cancelled while it
// waits for a lock another admission holds. ports.Store: a done context is
// answered with an error matching ctx.Err() that consumed nothing; an
// error that says whether quota may have been consumed must be true of the
// store (SPEC section 3: "A storage error says whether quota may have been
// consumed"); and the keys of a batch are locked so that no other
// admission sees them half done. A store may keep waiting until the lock
// is free and then give up or finish the admission; what it may not do:
//
//   - return the context's error as one that consumed nothing, and let the
//     admission go on in the background and count its unit once the lock
//     is free (a call run on a goroutine of its own, the caller answered
//     when its context ends);
//   - on the cancellation, release a lock it was only waiting for, so that
//     the holder's key is let into by another admission while the holder
//     is still deciding, and an update is lost;
//   - give up, with the context's error, once it holds the locks it waited
//     for, without releasing them, or give up a batch's wait without
//     releasing the locks it already took: every later admission of those
//     keys waits forever;
//   - answer the cancelled wait with no error and a decision it never
//     made, or with an error a host cannot tell from a backend failure
//     (one that does not match the context's error).
func lockWaitsScenario() scenario {
	return scenario{name: "lockwaits", cases: []testCase{
		{name: "a_check_cancelled_while_it_waits_for_a_lock_is_answered_truly_and_lets_the_lock_go", single: true,
			run: testCheckCancelledWhileWaiting},
		{name: "a_batch_cancelled_while_it_waits_for_a_lock_lets_every_lock_go", run: testBatchCancelledWhileWaiting},
	}}
}

// testCheckCancelledWhileWaiting holds a check of a key inside its clock
// read, with its locks held; a second check of the key, on the case's path,
// waits for them, and its context is cancelled; a third check of the key
// then runs while the first is still held. The counts must come out
// exact, and the second's answer true of the counter.
func testCheckCancelledWhileWaiting(t *testing.T, f *fixture) {
	const g = "lockwaits: a check cancelled while it waits for a lock another admission holds answers an error matching " +
		"the context's, true of what it consumed, or the decision it made, and lets no other admission into a key while " +
		"its holder decides"
	const limit = 6
	p, k := f.policy(limit, window), f.key()
	c := f.check(p, k)
	f.cancelledWait(t, g, limit, []domain.Check{c}, f.checkOp(c, f.path), []domain.Check{c})
}

// testBatchCancelledWhileWaiting holds a check of one key inside its clock
// read; a batch of a second key (in the lowest partition, when the store
// has two, and before the held key in counter-key order, so that a store
// locking partitions or keys in ascending order takes its lock first) and
// of the held key waits, and is cancelled; then a check of
// the second key runs while the first is still held. A store that gives up
// the batch's wait without releasing the lock it already took keeps the
// second key locked for ever.
func testBatchCancelledWhileWaiting(t *testing.T, f *fixture) {
	const g = "lockwaits: a batch cancelled while it waits for a lock another admission holds lets go of the locks it " +
		"took, and answers an error matching the context's, true of what it consumed, or the decision it made"
	const limit = 6
	p := f.policy(limit, window)
	// The held key in a partition above the other's, and after it in
	// counter-key order: a store that locks partitions, or keys, in
	// ascending order takes the other key's lock before it waits. (A
	// partition function may tie the two orders, as PostgreSQL's first
	// bytes do: the partitions are drawn again until both orders agree.)
	var k, k2 domain.SubjectKey
	for range 1000 {
		lo, hi := 0, 0
		if f.parts > 1 {
			lo = f.somePart(p)
			hi = f.otherPart(p, lo)
			lo, hi = min(lo, hi), max(lo, hi)
		}
		k, k2 = f.keyIn(p, hi), f.keyIn(p, lo)
		if f.check(p, k2).CounterKey().Compare(f.check(p, k).CounterKey()) < 0 {
			break
		}
	}
	held, other := f.check(p, k), f.check(p, k2)
	f.cancelledWait(t, g, limit, []domain.Check{held}, f.batchOp([]domain.Check{other, held}), []domain.Check{other, held})
}

// cancelledWait runs the race of the lockwaits cases: holder checks
// holder[0] and is pinned just after its clock sample; waiter starts with
// a context of its own, which is cancelled once it has stayed parked in
// the store (it waits for the holder's locks); once it has returned or
// stays parked, an intruder checks each key of intruded in turn, and the
// holder is released once the intruder has finished or is parked. When
// every one has returned, each key of intruded is checked once more, to
// read its count. Each key of intruded is checked once before the race. A store that reads no ManualClock runs each to its end,
// and the race proves only that the answers are true.
func (f *fixture) cancelledWait(t *testing.T, g string, limit int64, holder []domain.Check, waiter raceOp, intruded []domain.Check) {
	t.Helper()
	// Every key is stored before the race, so that a store that locks a
	// partition only for a new key's slot holds nothing but key locks.
	for _, c := range intruded {
		f.allow(c, limit-1, g+" (a key's first check, before the race)")
	}
	s := newSchedule()
	defer s.end()
	pn := newPin()
	defer pn.free()
	wctx, cancel := context.WithCancel(f.ctx)
	defer cancel()

	type run struct {
		m    *member
		done chan struct{}
		rs   []result
	}
	start := func(m *member, ops ...raceOp) *run {
		r := &run{done: make(chan struct{})}
		joined := make(chan *member, 1)
		go func() {
			defer close(r.done)
			mm := s.add(m)
			joined <- mm
			for _, op := range ops {
				mm.enter()
				res := op(f.ctx)
				mm.leave()
				r.rs = append(r.rs, res)
			}
			mm.finish()
		}()
		r.m = <-joined
		return r
	}
	first := start(&member{name: "holder", pin: pn}, f.checkOp(holder[0], f.path))
	held := false
	select {
	case <-pn.sampled:
		held = true
	case <-first.done:
	case <-time.After(callBound):
		require.FailNow(t, g, "the holder neither read the clock nor finished in %v: the store is stalled", callBound)
	}
	w := start(&member{name: "cancelled waiter", free: true}, func(context.Context) result { return waiter(wctx) })
	if held {
		f.waitBlockedOrDone(s, w.m)
	}
	cancel()
	if held {
		f.waitBlockedOrDone(s, w.m)
	}
	ops := make([]raceOp, len(intruded))
	for i, c := range intruded {
		ops[i] = f.checkOp(c, f.path)
	}
	in := start(&member{name: "intruder", free: true}, ops...)
	if held {
		f.waitBlockedOrDone(s, in.m)
	}
	pn.free()
	f.awaitRuns(g, s, held, []string{"holder", "cancelled waiter", "intruder"}, first.done, w.done, in.done)
	// Each intruded key once more, as the last member of the schedule, so
	// that a lock left taken is found as it is in the race.
	counts := make([]result, len(intruded))
	last := start(&member{name: "count reader", free: true}, func(context.Context) result {
		for i, c := range intruded {
			counts[i] = f.checkOp(c, f.path)(f.ctx)
		}
		return result{}
	})
	f.awaitRuns(g, s, held, []string{"count reader"}, last.done)

	how := "a store that reads no ManualClock ran each admission to its end"
	if held {
		how = "the holder pinned just after its clock sample, the waiter's context cancelled while it waited"
	}
	rw := w.rs[0]
	f.log.add("race: holder %s, waiter cancelled, intruder %s, via %s, %s → holder %s; waiter %s; intruder %s",
		f.log.batch(holder), f.log.batch(intruded), f.path, how, describeResult(first.rs[0]), describeResult(rw),
		describeResults(in.rs))

	var pe *panicError
	require.False(t, errors.As(rw.err, &pe), "%s: the store panicked: %v", g, rw.err)
	rh := first.rs[0]
	require.NoError(t, rh.err, "%s: the holder's check failed", g)
	require.Equal(t, domain.Allowed, rh.outcome, "%s: the holder's check is within the limit, got %s (%s)", g, rh.outcome, rh.reason)
	// units[i]: the units counted on intruded[i], and whether the waiter's
	// share of them is known.
	known := true
	waiterUnits := int64(0)
	switch {
	case rw.err == nil:
		require.Equal(t, domain.Allowed, rw.outcome, "%s: the cancelled waiter answered no error, so it decided: its "+
			"check is within the limit and must be allowed, got %s (%s) (a decision it never made?)", g, rw.outcome, rw.reason)
		waiterUnits = 1
	default:
		require.ErrorIs(t, rw.err, context.Canceled, "%s: the waiter's error must match its context's "+
			"(context.Canceled), so that a host tells a caller that left from a failing backend", g)
		if ports.MayHaveConsumedQuota(rw.err) {
			known = false
		}
	}
	seen := map[int64]int{}
	seen[rh.remaining[0]]++
	for i, r := range in.rs {
		require.NoError(t, r.err, "%s: intruder check %d failed", g, i+1)
		require.Equal(t, domain.Allowed, r.outcome, "%s: intruder check %d is within the limit, got %s (%s)", g, i+1, r.outcome, r.reason)
	}
	for i, c := range intruded {
		r := counts[i]
		require.NoError(t, r.err, "%s: the check reading key %d's count failed", g, i+1)
		require.Equal(t, domain.Allowed, r.outcome, "%s: the check reading key %d's count is within the limit, got %s (%s)",
			g, i+1, r.outcome, r.reason)
		heldKey := c.CounterKey() == holder[0].CounterKey()
		want := waiterUnits + 3 // the first check's, the waiter's, the intruder's and this one
		if heldKey {
			want++ // the holder's
		}
		got := limit - r.remaining[0]
		switch {
		case known:
			require.Equal(t, want, got, "%s: key %d counted %d units, want %d (the first check's, the holder's, %d of the cancelled "+
				"waiter as its answer says, the intruder's and the reading check's): a unit was lost to an admission let in "+
				"while another held the key, or the waiter counted after answering an error that consumed nothing",
				g, i+1, got, want, waiterUnits)
		default:
			require.Contains(t, []int64{want, want + 1}, got, "%s: key %d counted %d units, want %d or %d (the waiter's "+
				"error may have consumed)", g, i+1, got, want, want+1)
		}
		if heldKey {
			seen[in.rs[i].remaining[0]]++
		}
	}
	for rem, n := range seen {
		require.Equal(t, 1, n, "%s: the holder and the intruder both reported %d remaining: the intruder read the "+
			"key while the holder decided, and one unit was lost (the cancelled waiter let go of a lock it did not hold?)",
			g, rem)
	}
}

// awaitRuns waits until every done channel is closed. When the schedule
// held its clock reads, nothing may hold a lock once the holder has run
// (the members still running wait only on each other): members parked in
// the store for stuckFor are a lock left taken, and fail the case. A
// store that reads no ManualClock gets callBound.
func (f *fixture) awaitRuns(g string, s *schedule, held bool, names []string, dones ...<-chan struct{}) {
	f.t.Helper()
	deadline := time.Now().Add(callBound)
	var watch stuckWatch
	for _, d := range dones {
		for waiting := true; waiting; {
			select {
			case <-d:
				waiting = false
				continue
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				require.FailNow(f.t, g, "%s did not finish in %v: the store is deadlocked or stalled", strings.Join(names, ", "), callBound)
			}
			if !held {
				continue
			}
			if stuck, ok := s.stuck(); watch.saw(ok, time.Now()) {
				f.log.add("race: %s wait inside the store with no admission running", strings.Join(stuck, ", "))
				require.FailNow(f.t, g, "%s stayed blocked inside the store for %v after every admission that could "+
					"hold a lock had returned: a cancelled admission left a lock taken", strings.Join(stuck, ", "), stuckFor)
			}
		}
	}
}

// describeResults describes a member's results in order.
func describeResults(rs []result) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = describeResult(r)
	}
	return fmt.Sprintf("[%s]", strings.Join(parts, "; "))
}
