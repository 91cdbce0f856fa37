package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// testCleanupReadsClampedTime lets a key k end, has a batch read it ended
// (the batch is refused at a second key x that runs on, so nothing is
// written), steps the clock back, and runs a cleanup: the store has seen
// k end, so its time must not run back to before k's end for cleanup
// either (SPEC section 3: time never goes backwards for a key). A store
// whose cleanup reads the clock without the clamp keeps k, active again
// by its own reading; Stats shows it.
func testCleanupReadsClampedTime(t *testing.T, f *fixture) {
	const g = "clamp: after a clock steps back, cleanup reads the clamped time and removes a counter the store has seen " +
		"end (a store whose cleanup reads the clock without its clamp keeps it, its time run backwards)"
	f.requireSteppableClock()
	cleanup := f.requireCleaner()
	p, q := f.policy(1, window), f.policy(1, 2*window)
	k, x := f.key(), f.key()
	f.allow(f.check(p, k), 0, g)
	f.allow(f.check(q, x), 0, g+" (x, whose window is twice as long)")
	f.advance(window)
	f.admitDenied([]domain.Check{f.check(p, k), f.check(q, x)}, 1, domain.QuotaExhausted,
		g+" (the batch reads k ended and x running, and writes nothing)")
	f.stepBack(clampStep / 2)
	n, err := cleanup(10)
	require.NoError(t, err, "%s: CleanupExpired failed after the clock stepped back", g)
	require.LessOrEqual(t, n, 1, "%s: only k has ended", g)
	// A store that removes ended counters on its checks may have removed k
	// already; either way only x is left.
	f.requireOccupancy(occupancy{f.partOf(q, x): 1}, g+" (k ended at a time the store has read: cleanup removes it, "+
		"and x runs on)")
	a := f.allow(f.check(p, k), 0, g+" (k was removed: its next check opens a new window)")
	f.requireDuration(window, a.ResetAfter, g+" (k's new window opens at the clamped time)")
	f.requireRetry(f.deny(f.check(q, x), domain.QuotaExhausted, g+" (x runs on)"), window,
		g+" (x's time left, from the clamped time)")
}
