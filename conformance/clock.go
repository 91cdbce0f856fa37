package conformance

import (
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// ManualClock is a fake clock for harnesses of stores with an injectable
// clock: it starts at zero and moves only through [ManualClock.Advance],
// whose signature is an [AdvanceFunc]. Give it to the suite as
// [Instance.Clock] so that it can also hold an admission inside the store's
// clock read, the one point where a correct store holds every lock of the
// admission. The zero value is ready to use and it is safe for concurrent
// use.
type ManualClock struct {
	elapsed atomic.Int64
	// hold, when set, is called by Now before it reads the time: the suite's
	// schedule for the case in progress (see schedule.go).
	hold atomic.Pointer[schedule]
}

// Now returns the time elapsed since the clock's zero.
func (c *ManualClock) Now() time.Duration {
	if s := c.hold.Load(); s != nil {
		s.inClock()
	}
	return time.Duration(c.elapsed.Load())
}

// Advance moves the clock forward by d. A negative d, or one that would
// overflow a [time.Duration], fails t: a clock that cannot move as asked
// would make every later check meaningless.
func (c *ManualClock) Advance(t testing.TB, d time.Duration) {
	t.Helper()
	if d < 0 {
		t.Fatalf("conformance: ManualClock cannot move backwards (asked %v)", d)
		return
	}
	for {
		old := c.elapsed.Load()
		if old > math.MaxInt64-int64(d) {
			t.Fatalf("conformance: ManualClock at %v cannot advance by %v without overflow", time.Duration(old), d)
			return
		}
		if c.elapsed.CompareAndSwap(old, old+int64(d)) {
			return
		}
	}
}
