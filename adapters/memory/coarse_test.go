package memory

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// handClock is a coarse clock whose ticks and source the test drives.
type handClock struct {
	*CoarseClock
	ticks  chan time.Time
	source atomic.Int64
}

func newHandClock(t *testing.T) *handClock {
	h := &handClock{ticks: make(chan time.Time)}
	h.source.Store(int64(5 * time.Millisecond))
	h.CoarseClock = newCoarseClock(h.ticks, func() time.Duration { return time.Duration(h.source.Load()) }, func() {})
	t.Cleanup(h.Stop)
	return h
}

// tick moves the source to d and delivers a tick; it returns once the
// goroutine has taken the tick (the channel is unbuffered) and stored it.
func (h *handClock) tick(t *testing.T, d time.Duration) {
	h.source.Store(int64(d))
	h.ticks <- time.Time{}
	// The goroutine takes the next tick only after storing this one, so a
	// second, no-op tick proves the first reading was stored.
	h.ticks <- time.Time{}
	require.Equal(t, d, h.Now())
}

func TestCoarseClockReadsOnlyOnTicks(t *testing.T) {
	t.Parallel()

	h := newHandClock(t)
	require.Equal(t, 5*time.Millisecond, h.Now(), "a new clock starts at its source")
	h.source.Store(int64(9 * time.Millisecond))
	require.Equal(t, 5*time.Millisecond, h.Now(), "between ticks the reading stays put: that is the lag")
	h.tick(t, 12*time.Millisecond)
	h.tick(t, 13*time.Millisecond)
}

func TestCoarseClockStopIsIdempotentAndKeepsTheLastReading(t *testing.T) {
	t.Parallel()

	h := newHandClock(t)
	h.tick(t, 7*time.Millisecond)
	h.Stop()
	h.Stop()
	h.source.Store(int64(time.Hour))
	require.Equal(t, 7*time.Millisecond, h.Now())
	select {
	case h.ticks <- time.Time{}:
		t.Fatal("a stopped clock must not take ticks")
	default:
	}
}

// TestStoreOnCoarseClock runs a window through a store on a coarse clock:
// time moves only with ticks, and the store clamps and truncates it like any
// clock.
func TestStoreOnCoarseClock(t *testing.T) {
	t.Parallel()

	h, s, c := coarseStore(t, 1, 10*time.Millisecond)

	d := admitCheck(t, s, c)
	require.Equal(t, domain.Allowed, d.Outcome())
	h.tick(t, 14*time.Millisecond+700*time.Microsecond) // 9.7 ms later
	d = admitCheck(t, s, c)
	den, ok := d.Denial()
	require.True(t, ok)
	retry, _ := den.RetryAfter()
	require.Equal(t, time.Millisecond, retry, "truncated to 14 ms, the window anchored at 5 ms has 1 ms left")
	h.tick(t, 15*time.Millisecond)
	d = admitCheck(t, s, c)
	require.Equal(t, domain.Allowed, d.Outcome(), "the window ends exactly at 15 ms")
}

func TestNewCoarseClockRuns(t *testing.T) {
	t.Parallel()

	c := NewCoarseClock()
	defer c.Stop()
	first := c.Now()
	// The real ticker must move the reading; how soon depends on the
	// machine, so wait for the change itself rather than for a duration.
	for c.Now() == first {
		runtime.Gosched()
	}
	require.Greater(t, c.Now(), first)
}

// coarseStore returns a store on a hand-driven coarse clock and a check of
// limit per window on it.
func coarseStore(t *testing.T, limit int64, window time.Duration) (*handClock, *Store, domain.Check) {
	t.Helper()
	h := newHandClock(t)
	s, err := New(Config{MaxKeys: 4, Clock: h.CoarseClock})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("coarse-clock-test-secret-32bytes"))
	require.NoError(t, err)
	p := domain.MustPolicy("coarse", "clock", limit, window)
	return h, s, domain.NewCheck(p, hasher.KeyString(p, "subject"))
}

// admitCheck applies c to s through AdmitCheck and returns its decision,
// failing the test on an error.
func admitCheck(t *testing.T, s *Store, c domain.Check) domain.Decision {
	t.Helper()
	d, err := s.AdmitCheck(context.Background(), c)
	require.NoError(t, err)
	return d
}

// requireAllowed checks an allowed decision's remaining allowance and reset
// time.
func requireAllowed(t *testing.T, d domain.Decision, remaining int64, reset time.Duration) {
	t.Helper()
	a, ok := d.Allowance()
	require.True(t, ok, "want allowed, got %v", d.Outcome())
	require.Equal(t, remaining, a.Remaining)
	require.Equal(t, reset, a.ResetAfter)
}

// A store on a lagging coarse clock anchors a new window at the exact time,
// not at the lagging reading: the window cannot end early.
func TestCoarseClockStoreAnchorsWindowsAtTheExactTime(t *testing.T) {
	t.Parallel()

	h, s, c := coarseStore(t, 1, 10*time.Second)
	h.source.Store(int64(5 * time.Second)) // the reading lags by ~5 s: no tick
	d := admitCheck(t, s, c)
	requireAllowed(t, d, 0, 10*time.Second)

	// 9.999 s after the exact start, the window is still running. Anchored
	// at the lagging reading (5 ms), it would have ended at 10.005 s.
	h.tick(t, 14999*time.Millisecond)
	d = admitCheck(t, s, c)
	den, ok := d.Denial()
	require.True(t, ok, "the window anchored at 5 s runs until 15 s: got %v", d.Outcome())
	retry, _ := den.RetryAfter()
	require.Equal(t, time.Millisecond, retry)
}

// A check that the lagging reading would deny is decided again at the exact
// time; an allowed check of a running window is counted in it.
func TestCoarseClockLagNeverDenies(t *testing.T) {
	t.Parallel()

	h, s, c := coarseStore(t, 2, 10*time.Millisecond)
	ctx := context.Background()
	d := admitCheck(t, s, c) // at 5 ms: the window [5 ms, 15 ms)
	requireAllowed(t, d, 1, 10*time.Millisecond)

	h.source.Store(int64(15 * time.Millisecond)) // the window has ended; the reading lags
	d = admitCheck(t, s, c)
	requireAllowed(t, d, 0, 10*time.Millisecond) // counted in the window it found, at 5 ms

	// The lagging reading finds that window full; at the exact time it has
	// ended, and this check starts the next one.
	d = admitCheck(t, s, c)
	requireAllowed(t, d, 1, 10*time.Millisecond)

	// The same through Admit, a batch of one.
	b, err := domain.NewBatch([]domain.Check{c}, 1)
	require.NoError(t, err)
	require.NoError(t, s.Admit(ctx, b))
	d, _, err = b.DecisionOf(0)
	require.NoError(t, err)
	requireAllowed(t, d, 0, 10*time.Millisecond)
	h.source.Store(int64(25 * time.Millisecond))
	require.NoError(t, b.Reset([]domain.Check{c}, 1))
	require.NoError(t, s.Admit(ctx, b))
	d, _, err = b.DecisionOf(0)
	require.NoError(t, err)
	requireAllowed(t, d, 1, 10*time.Millisecond)
}

// Cleanup removes what has expired at the exact time.
func TestCoarseClockCleanupReadsTheExactTime(t *testing.T) {
	t.Parallel()

	h, s, c := coarseStore(t, 1, 10*time.Millisecond)
	ctx := context.Background()
	_, err := s.AdmitCheck(ctx, c)
	require.NoError(t, err)
	h.source.Store(int64(15 * time.Millisecond)) // expired exactly now; no tick
	removed, err := s.CleanupExpired(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, removed)
}
