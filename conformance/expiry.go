package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// expiryScenario checks where a counter's expiry meets the store's own
// bookkeeping: what cleanup forgets, which slots an expired key keeps, how
// a window ends between two whole milliseconds, and a clock that steps back.
//
//   - A counter removed by cleanup is gone for every later read, also
//     when the last check of it only read it (a denial writes nothing): a
//     read-through cache that a write invalidates but a delete does not
//     serves the removed counter again, and its key then renews "in
//     place" in a slot it no longer has, past the partition's bound.
//   - An expired key of a batch renews in its own slot, so that slot is
//     not free for a new key of the same batch: a store that removes
//     expired counters on the way (as the memory store does) and lets a
//     new key take the slot of an expired key the batch then writes back
//     stores more counters than the partition holds.
//   - A counter a check has just found active stays until its end, to the
//     microsecond: cleanup and a full partition's reclaim judge expiry at
//     the store's time, not in whole-millisecond buckets whose current one
//     still holds active counters.
//   - A clock that steps back does not move a window back: the store's
//     time never goes backwards (checked when the harness hands the suite
//     its ManualClock as Instance.Clock, which the suite then moves back).
func expiryScenario() scenario {
	return scenario{name: "expiry", cases: []testCase{
		{name: "cleanup_forgets_a_counter_last_read_by_a_denial", single: true, opts: capacityOptions, run: testCleanupForgetsReadCounter},
		{name: "batch_renewing_an_expired_key_keeps_its_slot", single: true, opts: capacityOptions, run: testBatchRenewalKeepsSlot},
		{name: "counters_active_between_whole_milliseconds_are_kept", single: true, opts: capacityOptions, run: testSubMillisecondExpiry},
		{name: "clock_stepping_back_moves_no_window_back", single: true, run: testClockSteppingBack},
	}}
}

func testCleanupForgetsReadCounter(t *testing.T, f *fixture) {
	const g = "expiry: a counter removed by cleanup is gone, even when the last check of it was a denial that only read it"
	cleanup, ok := f.cleaner()
	if !ok {
		f.skip("expiry: the store does not implement ports.Cleaner")
	}
	p := f.policy(1, window)
	part := f.somePart(p)
	c := f.opts.Capacity
	held := f.fillPartition(p, part, g)
	// Each held key is exhausted: a check of it reads its counter and
	// writes nothing.
	for _, k := range held {
		f.deny(f.check(p, k), domain.QuotaExhausted, g+" (an exhausted key)")
	}
	f.advance(window)
	removed := f.cleanAll(cleanup, c, g)
	require.Equal(t, c, removed, "%s: cleanup removes each of the %d expired counters once", g, c)
	f.requireOccupancy(occupancy{}, g+" (nothing is stored after cleanup)")
	for _, k := range f.keysIn(p, part, c) {
		f.allow(f.check(p, k), 0, g+" (a new key takes a freed slot)")
	}
	for i, k := range held {
		f.deny(f.check(p, k), domain.StorageCapacity, g+
			" (a removed key is new again, and the partition is full again: a store that still remembers the counter "+
			"it last read for this key renews it in a slot it no longer holds)")
		f.requireOccupancy(occupancy{part: c}, g+fmt.Sprintf(" (removed key %d of %d did not come back)", i+1, c))
	}
}

func testBatchRenewalKeepsSlot(t *testing.T, f *fixture) {
	const g = "expiry: an expired key of a batch renews in its own slot, which the batch's new key cannot take"
	p := f.policy(2, window)
	part := f.somePart(p)
	c := f.opts.Capacity
	expired := f.keyIn(p, part)
	f.allow(f.check(p, expired), 1, g+" (the key that will expire)")
	f.advance(window / 2)
	f.admitNew(p, part, c-1, g+" (keys that stay active)")
	// The first key's window has just ended; the others have half of
	// theirs left. The partition is full: one expired counter and c-1
	// active ones, and a store may remove the expired one on the way.
	f.advance(window / 2)
	fresh := f.keyIn(p, part)
	f.admitDenied([]domain.Check{f.check(p, expired), f.check(p, fresh)}, 1, domain.StorageCapacity,
		g+" (the expired key renews in place, so the new key finds no free slot)")
	// In the other order a store that removes expired counters on the way
	// may remove the expired key for the new key's check before the
	// expired key's own check reaches it (the memory store's allowance
	// does): the batch is then refused at its second check. Either way it
	// is refused, and stores nothing.
	bd := f.admit([]domain.Check{f.check(p, fresh), f.check(p, expired)}, g)
	_, den, denied := bd.Denied()
	require.True(t, denied && bd.Outcome() == domain.Denied && den.Reason() == domain.StorageCapacity,
		"%s: the same in the other order: one slot for two keys, so the batch is refused for storage capacity, got %s",
		g, describeBatch(bd))
	a := f.allow(f.check(p, expired), 1, g+" (the expired key renews alone)")
	f.requireDuration(window, a.ResetAfter, g+" (the renewed window starts at the renewing check)")
	f.deny(f.check(p, fresh), domain.StorageCapacity, g+" (the partition is full of active counters)")
	f.requireOccupancy(occupancy{part: c}, g+" (the partition never holds more than Capacity counters)")
}

// testSubMillisecondExpiry checks counters whose end falls between two
// whole milliseconds of the store's clock. A store that keeps time in
// whole milliseconds (the memory store truncates its clock) sees every
// window end on a millisecond and passes trivially; a store that keeps
// microseconds must not treat a counter as expired for the rest of the
// millisecond in which it ends. Each step first checks the key, so the
// case learns from the store itself whether the counter is active at that
// instant, then asks cleanup or a new key in the full partition to
// disturb it, then checks it again at the same instant.
func testSubMillisecondExpiry(t *testing.T, f *fixture) {
	const g = "expiry: a counter a check has just found active is neither cleaned up nor evicted at that instant, " +
		"however close to its end (expiry is judged at the store's time, not by the millisecond)"
	if !f.inst.ExactTime {
		f.skip("expiry: a store clock that keeps running ends millisecond windows by itself")
	}
	const short, limit = 2 * time.Millisecond, 10
	p, long := f.policy(limit, short), f.policy(1, window)
	part := f.somePart(p)
	c := f.opts.Capacity
	// Land the short window's start 0.75 ms past a whole millisecond, so
	// that it ends 0.75 ms into one too, and check it again 0.1 ms before
	// its end, in that same millisecond.
	f.advance((time.Millisecond + 750*time.Microsecond - start%time.Millisecond) % time.Millisecond)
	k := f.keyIn(p, part)
	f.allow(f.check(p, k), limit-1, g+" (a window of 2 ms)")
	f.advance(short - 100*time.Microsecond)
	// Active or renewed, as the store's clock has it: either way the
	// counter is active now, and stays so at this instant.
	d := f.decide(f.check(p, k), g)
	a, ok := d.Allowance()
	require.True(t, ok, "%s: the second check of the window is allowed, got %s", g, describe(d))
	rem := a.Remaining
	if cleanup, ok := f.cleaner(); ok {
		n, err := cleanup(c)
		require.NoError(t, err, "%s: CleanupExpired failed", g)
		require.Zero(t, n, "%s: the one stored counter was just found active, so cleanup removes none", g)
		rem = f.allow(f.check(p, k), rem-1, g+" (the counter survived cleanup: it counts on in its window)").Remaining
	}
	// Fill k's partition with counters that stay active, and press a new
	// key on it at the same instant.
	f.admitNew(long, part, c-1, g+" (keys that stay active)")
	f.deny(f.check(long, f.keyIn(long, part)), domain.StorageCapacity, g+" (the partition is full of active counters)")
	f.allow(f.check(p, k), rem-1, g+" (the counter was not evicted for the new key: it counts on in its window)")
}

func testClockSteppingBack(t *testing.T, f *fixture) {
	const g = "expiry: a clock that steps back does not move a window back: the store's time never goes backwards"
	if f.inst.Clock == nil {
		f.skip("expiry: the suite steps back only a clock handed over as Instance.Clock, to check that the store clamps it")
	}
	const limit, step = 10, 10 * time.Minute
	p, k := f.policy(limit, window), f.key()
	c := f.check(p, k)
	f.allow(c, limit-1, g)
	f.advance(step)
	a := f.allow(c, limit-2, g)
	f.requireDuration(window-step, a.ResetAfter, g)
	f.stepBack(step / 2)
	a = f.allow(c, limit-3, g+" (the clock stepped back)")
	f.requireDuration(window-step, a.ResetAfter, g+" (the window's time left never grows)")
	f.advance(step / 2)
	a = f.allow(c, limit-4, g+" (the clock caught up)")
	f.requireDuration(window-step, a.ResetAfter, g)
}

// stepBack moves the harness's ManualClock back by d.
func (f *fixture) stepBack(d time.Duration) {
	f.t.Helper()
	f.inst.Clock.stepBack(d)
	f.log.mu.Lock()
	f.log.elapsed -= d
	f.log.mu.Unlock()
	f.log.add("clock stepped back %v", d)
}

// stepBack moves the clock back by d, for the one case that checks a store
// clamps its clock.
func (c *ManualClock) stepBack(d time.Duration) { c.elapsed.Add(-int64(d)) }
