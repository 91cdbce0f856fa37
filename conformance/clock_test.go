package conformance_test

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/conformance"
)

func TestManualClockAdvances(t *testing.T) {
	t.Parallel()
	var c conformance.ManualClock
	require.Zero(t, c.Now())
	c.Advance(t, time.Minute)
	c.Advance(t, time.Millisecond)
	require.Equal(t, time.Minute+time.Millisecond, c.Now())
}

func TestManualClockConcurrentAdvancesAddUp(t *testing.T) {
	t.Parallel()
	var c conformance.ManualClock
	// Each goroutine advances through its own recorder, since only the test
	// goroutine may fail the test.
	fatals := make(chan string, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			r := &fatalRecorder{TB: t}
			for range 100 {
				c.Advance(r, time.Millisecond)
			}
			fatals <- r.msg
		})
	}
	wg.Wait()
	close(fatals)
	for msg := range fatals {
		require.Empty(t, msg)
	}
	require.Equal(t, 800*time.Millisecond, c.Now())
}

// fatalRecorder is a testing.TB whose Fatalf records the message instead
// of stopping the goroutine.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

func TestManualClockRefusesToMoveBackwardsOrOverflow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start time.Duration
		d     time.Duration
		want  string
	}{
		{"backwards", time.Second, -time.Millisecond, "cannot move backwards"},
		{"overflow", time.Duration(math.MaxInt64 - 10), 11, "without overflow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var c conformance.ManualClock
			c.Advance(t, tc.start)
			r := &fatalRecorder{TB: t}
			c.Advance(r, tc.d)
			require.Contains(t, r.msg, tc.want)
			require.Equal(t, tc.start, c.Now(), "a refused advance leaves the clock where it was")
		})
	}
}
