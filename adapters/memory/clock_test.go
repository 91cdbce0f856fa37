package memory

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

func TestManualClockMovesOnlyWhenTold(t *testing.T) {
	t.Parallel()
	c := NewManualClock()
	require.Equal(t, time.Duration(0), c.Now())
	c.Advance(1500 * time.Millisecond)
	require.Equal(t, 1500*time.Millisecond, c.Now())
	c.Set(time.Second)
	require.Equal(t, time.Second, c.Now(), "Set may move backwards")
	c.Advance(-2 * time.Second)
	require.Equal(t, -time.Second, c.Now())
}

func TestManualClockIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	c := NewManualClock()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 8000*time.Millisecond, c.Now())
}

func TestDefaultClockIsMonotonicWholeMilliseconds(t *testing.T) {
	t.Parallel()
	s, err := New(Config{MaxKeys: 1})
	require.NoError(t, err)
	prev := s.sample()
	require.GreaterOrEqual(t, prev, domain.Instant(0))
	for range 10_000 {
		now := s.sample()
		require.GreaterOrEqual(t, now, prev)
		require.Zero(t, now%1000, "an instant of %d µs is not whole milliseconds", now)
		prev = now
	}
}

func TestSampleTruncatesToMilliseconds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		clock time.Duration
		want  domain.Instant
	}{
		{0, 0},
		{999 * time.Microsecond, 0},
		{time.Millisecond, 1000},
		{1999999 * time.Nanosecond, 1000},
		{time.Hour + 1, domain.InstantOf(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.clock.String(), func(t *testing.T) {
			t.Parallel()
			c := NewManualClock()
			c.Set(tt.clock)
			s, err := New(Config{MaxKeys: 1, Clock: c})
			require.NoError(t, err)
			require.Equal(t, tt.want, s.sample())
		})
	}
}
