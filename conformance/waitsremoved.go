package conformance

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// testWaitingBatchFindsKeyRemoved fills a partition with a key k, a key m
// ordered before k and counters that, like m's, outlast k's, lets k end,
// pins a check of m
// in its clock read, starts a batch [k, m] (it waits for m's lock, or for
// the partition lock the pinned check holds), then CleanupExpired, which
// removes k unless the batch renewed it first, then a check of a new key q
// of the partition, which takes the slot k freed. Whichever order the
// store lets them in, exactly one of the batch and q gets the partition's
// last slot: a store that read k as stored before it waited claims no
// slot for k, found absent once the wait is over, and lets both in.
func testWaitingBatchFindsKeyRemoved(t *testing.T, f *fixture) {
	const g = "waits: a batch that waited for a lock while cleanup removed one of its keys claims a slot for that key " +
		"(a store that judged the key stored before the wait lets it back in beyond the partition's bound)"
	f.requireCleaner()
	const limit = 3
	c := f.opts.Capacity
	// k's window ends first; m's and the other counters' run on.
	pk, p := f.policy(limit, window), f.policy(limit, 2*window)
	part := f.somePart(p)
	// m before k in counter-key order: a store that locks keys in
	// ascending order waits for m's lock holding none of k's.
	k, m := f.keyIn(pk, part), f.keyIn(p, part)
	for f.check(p, m).CounterKey().Compare(f.check(pk, k).CounterKey()) > 0 {
		m = f.keyIn(p, part)
	}
	f.allow(f.check(pk, k), limit-1, g)
	f.allow(f.check(p, m), limit-1, g+" (m)")
	f.admitNew(p, part, c-2, g+" (filling the partition)")
	f.requireOccupancy(occupancy{part: c}, g+" (full)")
	f.advance(window)
	q := f.keyIn(p, part)
	batch := []domain.Check{f.check(pk, k), f.check(p, m)}
	results := f.race(g, true, []worker{
		{name: "check of m", pinned: true, ops: []raceOp{f.checkOp(f.check(p, m), f.path)}},
		{name: "batch [k, m]", wave: 1, ops: []raceOp{f.batchOp(batch)}},
		{name: "cleanup", wave: 2, watched: true, ops: []raceOp{f.cleanupOp(10)}},
		{name: "new key q", wave: 3, ops: []raceOp{f.checkOp(f.check(p, q), f.path)}},
	})
	f.logRace(fmt.Sprintf("%s %s while %s waits, CleanupExpired(10) runs and %s takes a slot of partition %d",
		f.log.check(f.check(p, m)), f.heldInClock(), f.log.batch(batch), f.log.check(f.check(p, q)), part), true, results)
	for i, rs := range results {
		require.Len(t, rs, 1, "%s: worker %d finished", g, i+1)
		require.NoError(t, rs[0].err, "%s: the store failed a valid call (worker %d)", g, i+1)
	}
	require.Equal(t, domain.Allowed, results[0][0].outcome, "%s: the check of stored key m is within its limit", g)
	require.LessOrEqual(t, results[2][0].removed, 1, "%s: only k had ended", g)
	batchTook, qTook := f.tookSlot(g, results[1][0], "the batch [k, m]"), f.tookSlot(g, results[3][0], "the new key q")
	require.True(t, batchTook != qTook, "%s: exactly one of the batch (admitted: %t) and the new key q (%t) takes the "+
		"partition's last slot", g, batchTook, qTook)
	f.requireOccupancy(occupancy{part: c}, g+" (the partition is full, and holds no more)")
	f.deny(f.check(p, f.keyIn(p, part)), domain.StorageCapacity, g+" (the partition is full)")
	if batchTook {
		f.allow(f.checkCost(pk, k, limit-1), 0, g+" (k's window, opened by the batch, holds one unit)")
		f.deny(f.check(p, m), domain.QuotaExhausted, g+" (m counted by its first check, the pinned one and the batch)")
		return
	}
	f.deny(f.check(pk, k), domain.StorageCapacity, g+" (cleanup removed k and q took its slot)")
	f.allow(f.checkCost(p, m, limit-2), 0, g+" (m counted by its first check and the pinned one)")
}

// testBatchWaitingForCleanupFindsKeyRemoved fills a partition with a key
// k whose window ends first and counters that run on, lets k end, pins
// CleanupExpired in its clock read (on a store whose cleanup reads the
// clock with a partition lock held, it holds that lock) and starts a
// batch [k, n] with a new key n of the partition. Whichever runs first,
// the batch is refused for storage capacity: before cleanup (or when
// cleanup skips the key the batch holds), k renews in place and n finds
// the partition full; after it, k and n are both new and the partition
// has one free slot for two. A store that judged k
// stored before it waited for the lock claims no slot for k, and lets
// both in, one counter beyond the bound.
func testBatchWaitingForCleanupFindsKeyRemoved(t *testing.T, f *fixture) {
	const g = "waits: a batch that waited for a cleanup which removed one of its keys claims a slot for that key " +
		"(a store that judged the key stored before the wait lets it back in beyond the partition's bound)"
	cleanup := f.requireCleaner()
	const limit = 3
	c := f.opts.Capacity
	pk, p := f.policy(limit, window), f.policy(limit, 2*window)
	// The first partition: a cleanup that goes through the partitions in
	// ascending order, reading the clock in each, reads it first there.
	const part = 0
	k := f.keyIn(pk, part)
	f.allow(f.check(pk, k), limit-1, g)
	f.admitNew(p, part, c-1, g+" (filling the partition)")
	f.requireOccupancy(occupancy{part: c}, g+" (full)")
	f.advance(window)
	n := f.keyIn(p, part)
	batch := []domain.Check{f.check(pk, k), f.check(p, n)}
	results := f.race(g, true, []worker{
		{name: "cleanup", pinned: true, ops: []raceOp{f.cleanupOp(10)}},
		{name: "batch [k, n]", wave: 1, ops: []raceOp{f.batchOp(batch)}},
	})
	f.logRace(fmt.Sprintf("CleanupExpired(10) %s while %s waits", f.heldInClock(), f.log.batch(batch)), true, results)
	for i, rs := range results {
		require.Len(t, rs, 1, "%s: worker %d finished", g, i+1)
		require.NoError(t, rs[0].err, "%s: the store failed a valid call (worker %d)", g, i+1)
	}
	require.LessOrEqual(t, results[0][0].removed, 1, "%s: only k had ended", g)
	r := results[1][0]
	require.True(t, r.outcome == domain.Denied && r.reason == domain.StorageCapacity,
		"%s: the batch [k, n] needs a slot its partition does not have, before cleanup (for n) or after it (for k "+
			"and n), and is refused for storage capacity; got %s (%s)", g, r.outcome, r.reason)
	// A cleanup that skips a key an admission holds (as SKIP LOCKED does)
	// may have left k to the next one, and a store that removes ended
	// counters on its checks may have removed it before either.
	removed := results[0][0].removed + f.cleanAll(cleanup, 10, g+" (k, if the cleanup in the race left it)")
	require.LessOrEqual(t, removed, 1, "%s: only k had ended", g)
	f.requireOccupancy(occupancy{part: c - 1}, g+" (k removed, nothing admitted)")
	f.admitNew(p, part, 1, g+" (the slot k freed)")
	f.deny(f.check(pk, k), domain.StorageCapacity, g+" (the partition is full again)")
}

// testRenewalDuringCleanupIsKept lets a key k of the first partition end,
// pins CleanupExpired in its clock read (on a store whose cleanup reads
// the clock with the partition's lock held, it holds that lock) and
// renews k meanwhile. Whichever the store lets in first, k's renewed
// counter is kept: cleanup removes k before the renewal, which creates
// it anew, or finds it renewed and leaves it. A cleanup that collects
// the ended counters first and removes them later, letting waiting
// admissions in between (in chunks, say, yielding the lock between them)
// without looking again, removes the renewed counter: an admitted unit
// forgotten.
func testRenewalDuringCleanupIsKept(t *testing.T, f *fixture) {
	const g = "waits: a renewal that a cleanup let in between collecting an ended counter and removing it is kept " +
		"(a cleanup that does not look again before it removes forgets the renewed counter)"
	f.requireCleaner()
	const limit = 3
	p := f.policy(limit, window)
	// The first partition: a cleanup that goes through the partitions in
	// ascending order, reading the clock in each, reads it first there.
	const part = 0
	k := f.keyIn(p, part)
	f.allow(f.check(p, k), limit-1, g)
	f.advance(window)
	results := f.race(g, true, []worker{
		{name: "cleanup", pinned: true, ops: []raceOp{f.cleanupOp(10)}},
		{name: "renewal of k", wave: 1, ops: []raceOp{f.checkOp(f.check(p, k), f.path)}},
	})
	f.logRace(fmt.Sprintf("CleanupExpired(10) %s while %s waits", f.heldInClock(), f.log.check(f.check(p, k))),
		true, results)
	for i, rs := range results {
		require.Len(t, rs, 1, "%s: worker %d finished", g, i+1)
		require.NoError(t, rs[0].err, "%s: the store failed a valid call (worker %d)", g, i+1)
	}
	require.LessOrEqual(t, results[0][0].removed, 1, "%s: only k had ended", g)
	require.Equal(t, domain.Allowed, results[1][0].outcome, "%s: k's renewal opens a new window", g)
	require.Equal(t, []int64{limit - 1}, results[1][0].remaining, "%s: k's renewal opens a new window", g)
	f.allow(f.checkCost(p, k, limit-1), 0, g+" (k's renewed counter is kept: cleanup must not remove a counter "+
		"renewed after it collected it)")
	f.requireOccupancy(occupancy{part: 1}, g+" (k holds one slot)")
}
