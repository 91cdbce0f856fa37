package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// sweepScenario checks a store that frees the slots of ended counters on
// its way through an admission, as the memory store does: it does so for
// every check of a batch, on that check's own partition, and counts a
// window ending exactly now as ended, since windows are half-open. A store
// that frees no slot during admission (it waits for CleanupExpired, as the
// PostgreSQL store does) refuses such a batch at its first check and
// passes; only a batch admitted part-way into the slots of ended counters,
// its first new key finding a slot and a later one not, breaks the rule.
func sweepScenario() scenario {
	return scenario{name: "sweep", cases: []testCase{
		{name: "a_window_ending_now_frees_its_slot_like_one_ended_before", opts: capacityOptions, run: testSweepAtWindowEnd},
		{name: "every_check_of_a_batch_frees_ended_slots_of_its_own_partition", opts: capacityOptions, run: testSweepEveryCheck},
	}}
}

// requireNoPartWaySweep applies checks, new keys on partitions full of
// ended counters, as one batch: it must be admitted, or refused for
// storage capacity at its first check; a refusal at a later check means
// the store freed a slot for the first and not for that one.
func (f *fixture) requireNoPartWaySweep(checks []domain.Check, g, why string) {
	f.t.Helper()
	bd := f.admit(checks, g)
	if bd.Outcome() == domain.Allowed {
		return
	}
	i, den, ok := bd.Denied()
	require.True(f.t, ok && den.Reason() == domain.StorageCapacity,
		"%s: want the batch allowed or denied for storage capacity, got %s", g, describeBatch(bd))
	require.Zero(f.t, i, "%s: the batch was refused at check %d after its first new key found a slot: %s; got %s",
		g, i, why, describeBatch(bd))
}

// testSweepAtWindowEnd fills a partition with one counter that ended a
// millisecond ago and Capacity-1 counters ending exactly now, then sends a
// batch of two new keys there. A store that frees ended slots during
// admission frees the first counter's slot, and the others' as well: a
// window ending exactly now has ended. A store that compares expiry < now
// there frees one slot only, and refuses the second key.
func testSweepAtWindowEnd(t *testing.T, f *fixture) {
	const g = "sweep: a store that frees the slots of ended counters during admission frees the slot of a window " +
		"ending exactly now as it frees one that ended before"
	p := f.policy(1, window)
	part := f.somePart(p)
	c := f.opts.Capacity
	f.admitNew(p, part, 1, g+" (a counter that will have ended a millisecond before the batch)")
	f.advance(time.Millisecond)
	f.admitNew(p, part, c-1, g+" (counters ending exactly when the batch runs)")
	f.advance(window)
	f.requireNoPartWaySweep([]domain.Check{f.check(p, f.keyIn(p, part)), f.check(p, f.keyIn(p, part))}, g,
		"every counter of its partition had ended (windows are half-open, so one ending exactly now has "+
			"ended), so a slot freed for the first key means slots for the second")
}

// testSweepEveryCheck fills two partitions with counters that have ended
// and sends a batch of one new key for each. A store that frees ended
// slots during admission frees them on each check's own partition, so
// both keys fit; a store that cleans only for a batch's first check (or
// once per batch) frees the first partition's slots only and refuses the
// second key.
func testSweepEveryCheck(t *testing.T, f *fixture) {
	const g = "sweep: a store that frees the slots of ended counters during admission does so for every check of " +
		"a batch, on that check's own partition"
	if f.parts == 1 {
		f.skip("sweep: the store has one capacity partition")
	}
	p := f.policy(1, window)
	first := f.somePart(p)
	second := f.otherPart(p, first)
	f.fillPartition(p, first, g+" (the first partition)")
	f.fillPartition(p, second, g+" (the second partition)")
	f.advance(window + time.Minute)
	f.requireNoPartWaySweep([]domain.Check{f.check(p, f.keyIn(p, first)), f.check(p, f.keyIn(p, second))}, g,
		"every counter of both partitions had ended, and a check that frees ended slots of its own partition "+
			"frees them for the second key too")
}
