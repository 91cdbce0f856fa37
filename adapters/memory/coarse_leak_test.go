package memory_test

import (
	"runtime"
	"testing"

	"go.uber.org/goleak"

	"github.com/runlimit/runlimit/adapters/memory"
)

// TestCoarseClockLeavesNoGoroutine: a CoarseClock's goroutine ends with
// Stop, called any number of times, and with the clock itself once it is
// unreachable and unstopped. Reading a stopped clock starts nothing.
//
// It does not run in parallel: goleak compares against the goroutines of
// the moment, and other tests start clocks of their own.
func TestCoarseClockLeavesNoGoroutine(t *testing.T) {
	t.Run("stopped", func(t *testing.T) {
		before := goleak.IgnoreCurrent()
		c := memory.NewCoarseClock()
		c.Stop()
		c.Stop()
		_ = c.Now()
		goleak.VerifyNone(t, before)
	})
	t.Run("unreachable", func(t *testing.T) {
		before := goleak.IgnoreCurrent()
		func() { _ = memory.NewCoarseClock().Now() }()
		// The clock's cleanup runs after a collection finds it
		// unreachable; goleak then waits for the goroutine to end.
		runtime.GC()
		runtime.GC()
		goleak.VerifyNone(t, before)
	})
}
