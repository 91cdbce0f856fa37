package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// testCleanupRemovesUpToItsMax checks that one call of CleanupExpired
// removes as many expired counters as it is allowed, not merely some: a
// maintenance loop drains a store by calling it until a call removes less
// than it asked for, so a cleanup that skips expired counters it passes
// (one that steps over the entry after each it deletes, as a loop over a
// list it deletes from does, or whose scan page ends early) leaves a
// backlog holding slots until the next tick, or for good.
func testCleanupRemovesUpToItsMax(t *testing.T, f *fixture) {
	const g = "cleanup: one CleanupExpired call removes every expired counter it may, up to its maximum"
	cleanup := f.requireCleaner()
	shortP, longP := f.policy(2, time.Minute), f.policy(2, window)
	part := f.somePart(shortP)
	short := f.keysIn(shortP, part, 5)
	long := f.keysIn(longP, f.somePart(longP), 2)
	for _, k := range short {
		f.allow(f.check(shortP, k), 1, g)
	}
	for _, k := range long {
		f.allow(f.check(longP, k), 1, g)
	}
	f.advance(time.Minute)
	n, err := cleanup(3)
	require.NoError(t, err, "%s: CleanupExpired failed", g)
	require.Equal(t, 3, n, "%s: five counters have expired, so CleanupExpired(3) removes three", g)
	n, err = cleanup(10)
	require.NoError(t, err, "%s: CleanupExpired failed", g)
	require.Equal(t, 2, n, "%s: two expired counters are left, so CleanupExpired(10) removes both", g)
	f.requireOccupancy(occupancy{f.partOf(longP, long[0]): 1}.add(f.partOf(longP, long[1]), 1), g+" (only the active counters are left)")
	for _, k := range long {
		f.allow(f.check(longP, k), 0, g+" (an active counter kept its count)")
	}
}

// add returns o with n more counters in partition part.
func (o occupancy) add(part, n int) occupancy {
	o[part] += n
	return o
}

// testCleanupPassesHeldCounter pins a batch just after its clock sample,
// a batch naming the earliest of three ended counters of a partition and
// an exhausted key, so that it is denied and leaves the ended counter as
// it was, and runs a cleanup meanwhile. A store that holds the batch's
// locks keeps the cleanup waiting, or lets it skip the held counter; an
// optimistic store lets it remove all three, and the batch, finding its
// read changed, is denied again. Either way ([ports.Cleaner]) a cleanup
// that removed fewer than it asked for left no ended counter but the held
// one, so a second call removes at most that one, and the two together
// removed no more than the three counters that had ended. One that stops
// at the first counter an admission holds (a scan that ends at a row it
// cannot lock, NOWAIT where SKIP LOCKED belongs) leaves the others
// behind, holding their slots though it answered as a drained store; one
// that counts the counters it skipped reports one it did not remove.
func testCleanupPassesHeldCounter(t *testing.T, f *fixture) {
	const g = "cleanup: a cleanup passing a counter an admission holds removes every other ended counter it may, " +
		"and counts only what it removed"
	cleanup := f.requireCleaner()
	const max, ended = 10, 3
	p, q := f.policy(2, time.Minute), f.policy(1, window)
	part := f.somePart(p)
	ks := f.keysIn(p, part, ended)
	exhausted := f.keyIn(q, part)
	f.allow(f.check(q, exhausted), 0, g+" (a key that denies the batch)")
	// The held key's window ends first, so that a cleanup going by
	// expiry meets it before the others.
	f.allow(f.check(p, ks[0]), 1, g)
	f.advance(time.Second)
	for _, k := range ks[1:] {
		f.allow(f.check(p, k), 1, g)
	}
	f.advance(time.Minute)
	batch := []domain.Check{f.check(p, ks[0]), f.check(q, exhausted)}
	r1, r2, held := f.pinnedRace(g, f.batchOp(batch), func() {}, f.cleanupOp(max))
	how := "a store that reads no ManualClock ran the batch to its end"
	if held {
		how = "the batch pinned just after its clock sample"
	}
	f.log.add("race: batch %s naming the earliest of %d ended counters and an exhausted key, %s, while a cleanup ran → "+
		"batch %s; cleanup %s", f.log.batch(batch), ended, how, describeResult(r1), describeResult(r2))
	require.NoError(t, r1.err, "%s: the store failed a valid batch", g)
	require.NoError(t, r2.err, "%s: the store failed a valid cleanup", g)
	require.Equal(t, domain.Denied.String()+" ("+domain.QuotaExhausted.String()+")", r1.outcome.String()+" ("+r1.reason.String()+")",
		"%s: the batch names an exhausted key", g)
	require.LessOrEqual(t, r2.removed, ended, "%s: %d counters had ended, and the cleanup reported %d removed", g, ended, r2.removed)
	n, err := cleanup(max)
	require.NoError(t, err, "%s: CleanupExpired failed", g)
	require.LessOrEqual(t, n, 1, "%s: the first CleanupExpired(%d) removed %d, fewer than it asked for, so it left no "+
		"ended counter but the one the batch held; a second call removed %d: the first stopped at the held counter", g, max, r2.removed, n)
	require.LessOrEqual(t, r2.removed+n, ended, "%s: %d counters had ended, and two cleanups reported %d and %d removed: "+
		"a counter skipped because an admission held it was counted as removed", g, ended, r2.removed, n)
	f.requireOccupancy(occupancy{part: 1}, g+" (only the exhausted key is left)")
	f.allow(f.check(p, ks[0]), 1, g+" (the held counter was removed or ended, so it starts afresh)")
}
