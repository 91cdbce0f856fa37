package testkit_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/testkit"
)

func TestTrapClockPanicsOnlyWhileArmed(t *testing.T) {
	t.Parallel()
	var c testkit.TrapClock
	c.Advance(time.Second)
	require.Equal(t, time.Second, c.Now())
	c.Arm(true)
	require.PanicsWithValue(t, testkit.TrapPanic, func() { c.Now() })
	c.Arm(false)
	require.Equal(t, time.Second, c.Now())
}

func TestLogBufferKeepsEveryWrite(t *testing.T) {
	t.Parallel()
	var b testkit.LogBuffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = fmt.Fprintf(&b, "<%d>", i)
		}()
	}
	wg.Wait()
	for i := range 8 {
		require.Contains(t, b.String(), fmt.Sprintf("<%d>", i))
	}
}

func TestLoggerWritesDebugRecordsWithoutTimes(t *testing.T) {
	t.Parallel()
	var b testkit.LogBuffer
	b.Logger().Debug("hello", "n", 1)
	require.Contains(t, b.String(), "level=DEBUG msg=hello n=1")
	require.NotContains(t, b.String(), "time=")
}
