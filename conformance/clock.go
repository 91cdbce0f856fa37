package conformance

import (
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// ManualClock is a fake clock for harnesses of stores with an injectable
// clock: it starts at zero and moves only through [ManualClock.Advance],
// whose signature is an [AdvanceFunc], except that one case steps a
// clock handed over as [Instance.Clock] back, to check that the store
// clamps it. The zero value is ready to use and it is safe for concurrent
// use.
//
// While the suite races admissions, every ManualClock also holds a racing
// admission inside its clock read, the one point where a correct store
// holds every lock of the admission, until the other racers wait on the
// store's locks (see [Run]), and one case pins an admission just after its
// clock sample while time moves on. So a store that reads a ManualClock has
// its races forced, whether the harness hands the clock over as
// [Instance.Clock] or only its Advance method.
type ManualClock struct {
	elapsed atomic.Int64
}

// Now returns the time elapsed since the clock's zero.
func (c *ManualClock) Now() time.Duration {
	if racing.active.Load() > 0 {
		return readIfRacing(c.read)
	}
	return c.read()
}

func (c *ManualClock) read() time.Duration { return time.Duration(c.elapsed.Load()) }

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
