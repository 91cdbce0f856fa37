package memory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// A coarse reading that goes backwards cannot move a shard back: an allowed
// check on the optimistic path is evaluated at the latest time the shard
// has seen, not at the earlier reading, so its reset time is the window's
// true remainder.
func TestCoarseClockGoingBackwardsDoesNotMoveTheShardBack(t *testing.T) {
	t.Parallel()

	h, s, c := coarseStore(t, 3, 10*time.Millisecond)
	d := admitCheck(t, s, c) // at 5 ms: the window [5 ms, 15 ms)
	requireAllowed(t, d, 2, 10*time.Millisecond)
	h.tick(t, 12*time.Millisecond)
	d = admitCheck(t, s, c)
	requireAllowed(t, d, 1, 3*time.Millisecond)

	// Both readings go back to 6 ms: the shard has seen 12 ms and stays
	// there. Read at 6 ms, the reset time would be 9 ms.
	h.tick(t, 6*time.Millisecond)
	d = admitCheck(t, s, c)
	requireAllowed(t, d, 0, 3*time.Millisecond)

	// Denied at 12 ms, and decided again at the exact time (still read as
	// 12 ms): the window is not renewed by the regression.
	d = admitCheck(t, s, c)
	den, ok := d.Denial()
	require.True(t, ok, "got %v", d.Outcome())
	retry, _ := den.RetryAfter()
	require.Equal(t, 3*time.Millisecond, retry)

	// The exact reading reaches the window's end while the coarse one
	// still lags behind: the denial is decided again, and renews.
	h.source.Store(int64(15 * time.Millisecond))
	d = admitCheck(t, s, c)
	requireAllowed(t, d, 2, 10*time.Millisecond)
}

// A store on a stopped coarse clock counts allowed checks of a running
// window in it, but starts every window at the exact time and decides
// every denial there, so a stopped clock never keeps a full window alive.
func TestStoreOnStoppedCoarseClock(t *testing.T) {
	t.Parallel()

	h, s, c := coarseStore(t, 2, 10*time.Millisecond)
	admit := func() domain.Decision {
		t.Helper()
		d := admitCheck(t, s, c)
		return d
	}
	requireAllowed(t, admit(), 1, 10*time.Millisecond) // at 5 ms: [5 ms, 15 ms)
	h.Stop()
	require.Equal(t, 5*time.Millisecond, h.Now())

	h.source.Store(int64(100 * time.Millisecond))
	// Read at the stopped 5 ms, the window is running: counted in it.
	requireAllowed(t, admit(), 0, 10*time.Millisecond)
	// Full at 5 ms; at the exact 100 ms it has ended: a new window.
	requireAllowed(t, admit(), 1, 10*time.Millisecond)
	// The shard has seen 100 ms, so the stopped reading is raised to it.
	requireAllowed(t, admit(), 0, 10*time.Millisecond)
	den, ok := admit().Denial()
	require.True(t, ok)
	retry, _ := den.RetryAfter()
	require.Equal(t, 10*time.Millisecond, retry)

	h.source.Store(int64(110 * time.Millisecond))
	requireAllowed(t, admit(), 1, 10*time.Millisecond)
}

// A shadow denial is a denial: one the lagging reading would give is
// decided again at the exact time, where the window may have ended.
func TestCoarseClockLagNeverShadowDenies(t *testing.T) {
	t.Parallel()

	h, s, c := coarseStore(t, 1, 10*time.Millisecond)
	shadow, err := c.Policy().WithMode(domain.Shadow)
	require.NoError(t, err)
	c = domain.NewCheck(shadow, c.SubjectKey())
	d := admitCheck(t, s, c) // at 5 ms: the window [5 ms, 15 ms)
	requireAllowed(t, d, 0, 10*time.Millisecond)

	h.source.Store(int64(15 * time.Millisecond)) // the window has ended; the reading lags
	d = admitCheck(t, s, c)
	requireAllowed(t, d, 0, 10*time.Millisecond)

	// Still full at the exact time: shadow-denied there.
	d = admitCheck(t, s, c)
	require.Equal(t, domain.ShadowDenied, d.Outcome())
}
