package conformance

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// waitsScenario checks that an admission which had to wait for a lock
// decides on what it finds once the wait is over, not on what it counted
// before it waited.
//
// A store may keep each partition's count of stored counters apart from
// its keys (an atomic counter, a ledger row) and read it early: before its
// key locks, or in a short read of its own. An admission that then waits
// for a key lock another admission holds decides, once it gets the lock,
// on a count from before the wait, while a third admission has filled the
// partition's last slot in the meantime: the partition then holds one
// counter more than its bound. The case holds the lock the batch waits on
// inside a pinned clock read (see Run), so on a store that reads a
// ManualClock the last slot is always filled during the wait.
//
// A cleanup may likewise collect expired counters partition by partition,
// each under its partition's lock, and remove them only once it has
// collected from every partition. While it waits for a later partition's
// lock, a counter it collected from an earlier one is renewed, and a
// cleanup that does not look again removes the renewed counter (an
// admitted unit forgotten) or frees its slot.
//
// An optimistic store waits in its own way: it starts again after a
// conflict. A retry that counts its new keys' free slots as of its read
// (or its first attempt's), not under its conditional write, lets a new
// key that takes the last slot between that read and the write into the
// partition beside its own. The case pins the retry's clock sample as
// well as the first attempt's, so that the last slot is always taken in
// between.
func waitsScenario() scenario {
	return scenario{name: "waits", cases: []testCase{
		{name: "a_batch_that_waited_for_a_lock_counts_free_slots_after_the_wait", single: true,
			opts: capacityOptions, run: testWaitingBatchRecountsSlots},
		{name: "cleanup_that_waited_for_a_lock_looks_again_before_it_removes", single: true,
			opts: capacityOptions, run: testWaitingCleanupLooksAgain},
		{name: "a_batch_that_waited_while_cleanup_removed_its_key_claims_a_slot_for_it", single: true,
			opts: capacityOptions, run: testWaitingBatchFindsKeyRemoved},
		{name: "a_batch_that_waited_for_a_cleanup_claims_a_slot_for_the_key_it_removed",
			opts: capacityOptions, run: testBatchWaitingForCleanupFindsKeyRemoved},
		{name: "a_renewal_a_cleanup_let_in_before_it_removed_the_key_is_kept", single: true,
			opts: capacityOptions, run: testRenewalDuringCleanupIsKept},
		{name: "a_batch_that_starts_again_after_a_conflict_counts_free_slots_as_of_its_write", single: true,
			opts: capacityOptions, run: testRetryRecountsSlots},
	}}
}

// testWaitingBatchRecountsSlots fills a partition to one free slot, pins a
// check of a stored key x in its clock read, starts a batch [x, n] with a
// new key n of that partition (it waits for x's lock, or for a partition
// lock the pinned check holds), and then a check of another new key m of
// the partition. Exactly one of n and m takes the last slot, whichever
// order the store lets them in: the other is refused for storage capacity.
// When the store has several partitions, x lies in a higher one than n
// and m: a store with one lock per partition, which counts the free slots
// of each under its lock before it takes them all in ascending order, has
// counted n's partition when it waits for x's, and lets m in meanwhile.
func testWaitingBatchRecountsSlots(t *testing.T, f *fixture) {
	const g = "waits: a batch that waited for a lock counts its new key's free slot after the wait (a count read " +
		"before the wait lets a second new key into the partition's last slot)"
	const limit = 3
	c := f.opts.Capacity
	p := f.policy(limit, window)
	// x in the higher partition: a store that counts its partitions' free
	// slots in ascending order, each in a short hold of its own, has
	// counted n's before it waits for x's.
	part, xpart := f.partsAscending(p)
	x := f.keyIn(p, xpart)
	f.allow(f.check(p, x), limit-1, g)
	stored := occupancy{xpart: 1}
	fill := c - 1 - stored[part]
	f.admitNew(p, part, fill, g+" (filling the partition to one free slot)")
	stored[part] += fill
	f.requireOccupancy(stored, g+" (one free slot left)")
	n, m := f.keyIn(p, part), f.keyIn(p, part)
	batch := []domain.Check{f.check(p, x), f.check(p, n)}
	results := f.race(g, true, []worker{
		{name: "check of x", pinned: true, ops: []raceOp{f.checkOp(f.check(p, x), f.path)}},
		{name: "batch [x, n]", wave: 1, ops: []raceOp{f.batchOp(batch)}},
		{name: "new key m", wave: 2, ops: []raceOp{f.checkOp(f.check(p, m), f.path)}},
	})
	f.logRace(fmt.Sprintf("%s %s while %s waits, then %s takes the last slot of partition %d",
		f.log.check(f.check(p, x)), f.heldInClock(), f.log.batch(batch), f.log.check(f.check(p, m)), part), true, results)
	for i, rs := range results {
		require.Len(t, rs, 1, "%s: worker %d finished", g, i+1)
		require.NoError(t, rs[0].err, "%s: the store failed a valid check or batch (worker %d)", g, i+1)
	}
	require.Equal(t, domain.Allowed, results[0][0].outcome, "%s: the check of stored key x is within its limit", g)
	f.requireLastSlotTakenOnce(g, p, part, stored, c, x, limit, results[1][0], results[2][0], "x counted once by the check and once by the batch when it was admitted")
}

// testWaitingCleanupLooksAgain lets a key k expire in a lower partition,
// pins a check of a new key x of a higher partition in its clock read
// (it holds that partition's lock), starts CleanupExpired, which on a
// store that collects expired counters in ascending partition order has
// collected k when it waits for x's partition, and then renews k. k's
// renewed counter must be kept, and its slot counted, whether cleanup
// removed k before the renewal (which then created it anew) or found it
// renewed.
func testWaitingCleanupLooksAgain(t *testing.T, f *fixture) {
	const g = "waits: a cleanup that waited for a lock looks again before it removes a counter it collected " +
		"(one that does not removes, or frees the slot of, a counter renewed while it waited)"
	f.requireCleaner()
	const limit = 3
	c := f.opts.Capacity
	p := f.policy(limit, window)
	lo, hi := f.partsAscending(p)
	k := f.keyIn(p, lo)
	f.allow(f.check(p, k), limit-1, g)
	f.advance(window)
	x := f.keyIn(p, hi)
	results := f.race(g, true, []worker{
		{name: "check of new key x", pinned: true, ops: []raceOp{f.checkOp(f.check(p, x), f.path)}},
		{name: "cleanup", wave: 1, watched: true, ops: []raceOp{f.cleanupOp(10)}},
		{name: "renewal of k", wave: 2, ops: []raceOp{f.checkOp(f.check(p, k), f.path)}},
	})
	f.logRace(fmt.Sprintf("%s %s while CleanupExpired(10) starts, then %s",
		f.log.check(f.check(p, x)), f.heldInClock(), f.log.check(f.check(p, k))), true, results)
	f.requireRaceDone(results, g)
	require.LessOrEqual(t, results[1][0].removed, 1, "%s: only k had expired", g)
	f.allow(f.checkCost(p, k, limit-1), 0, g+" (k's renewed counter is kept: cleanup must not remove a counter "+
		"renewed while it waited)")
	f.allow(f.checkCost(p, x, limit-1), 0, g+" (x's counter is kept)")
	stored := occupancy{lo: 1}
	stored[hi]++
	f.requireOccupancy(stored, g+" (k and x each hold one slot)")
	f.admitNew(p, lo, c-stored[lo], g+" (the free slots of k's partition)")
	f.deny(f.check(p, f.keyIn(p, lo)), domain.StorageCapacity, g+" (k's partition holds Capacity counters: a slot "+
		"freed for k's renewed counter lets one key too many in)")
}

// partsAscending returns two partitions of policy p, lower index first,
// or one partition twice when the store has only one.
func (f *fixture) partsAscending(p domain.Policy) (lo, hi int) {
	lo = f.somePart(p)
	hi = lo
	if q := f.otherPart(p, lo); q >= 0 {
		lo, hi = min(lo, q), max(lo, q)
	}
	return lo, hi
}

// tookSlot reports whether r, the answer of who in a race for a
// partition's last free slot, took it: r must be an admission or a
// refusal for storage capacity.
func (f *fixture) tookSlot(g string, r result, who string) bool {
	switch {
	case r.outcome == domain.Allowed:
		return true
	case r.outcome == domain.Denied && r.reason == domain.StorageCapacity:
		return false
	}
	require.Failf(f.t, g, "%s is admitted or refused for storage capacity, got %s (%s)", who, r.outcome, r.reason)
	return false
}

// requireLastSlotTakenOnce is the verdict of a race in which batch [x, n]
// (answered in batch) and a check of new key m (answered in single) both
// wanted the last free slot of partition part, whose bound is capacity: x
// is stored, with limit - 1 of its quota used before the race, and stored
// is the partition's occupancy before it. Exactly one of n and m took the
// slot, the partition is then full, and x's quota is what was admitted of
// it; counted says how x was counted, for the message.
func (f *fixture) requireLastSlotTakenOnce(g string, p domain.Policy, part int, stored occupancy, capacity int,
	x domain.SubjectKey, limit int64, batch, single result, counted string) {
	t := f.t
	nTook, mTook := f.tookSlot(g, batch, "the batch [x, n]"), f.tookSlot(g, single, "the new key m")
	require.True(t, nTook != mTook, "%s: exactly one of the new keys n (in the batch: %t) and m (%t) takes the "+
		"partition's one free slot", g, nTook, mTook)
	stored[part] = capacity
	f.requireOccupancy(stored, g+" (the partition is full, and holds no more)")
	f.deny(f.check(p, f.keyIn(p, part)), domain.StorageCapacity, g+" (the partition is full)")
	used := int64(2)
	if nTook {
		used++
	}
	if used < limit {
		f.allow(f.checkCost(p, x, limit-used), 0, g+" ("+counted+")")
	}
	f.deny(f.check(p, x), domain.QuotaExhausted, g+" (x's limit is used up)")
}
