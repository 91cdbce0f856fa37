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

	h := newHandClock(t)
	s, err := New(Config{MaxKeys: 4, Clock: h})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("coarse-clock-test-secret-32bytes"))
	require.NoError(t, err)
	p := domain.MustPolicy("coarse", "clock", 1, 10*time.Millisecond)
	c := domain.NewCheck(p, hasher.KeyString(p, "subject"))
	ctx := context.Background()

	d, err := s.AdmitCheck(ctx, c)
	require.NoError(t, err)
	require.Equal(t, domain.Allowed, d.Outcome())
	h.tick(t, 14*time.Millisecond+700*time.Microsecond) // 9.7 ms later
	d, err = s.AdmitCheck(ctx, c)
	require.NoError(t, err)
	den, ok := d.Denial()
	require.True(t, ok)
	retry, _ := den.RetryAfter()
	require.Equal(t, time.Millisecond, retry, "truncated to 14 ms, the window anchored at 5 ms has 1 ms left")
	h.tick(t, 15*time.Millisecond)
	d, err = s.AdmitCheck(ctx, c)
	require.NoError(t, err)
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
