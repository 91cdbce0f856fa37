package conformance_test

import (
	"testing"
	"time"

	"github.com/runlimit/runlimit/conformance"
	"github.com/runlimit/runlimit/conformance/internal/brokenstores"
)

// harness builds the suite's own fixture store with fault on a manual clock.
// The store implements none of the optional capabilities.
func harness(fault brokenstores.Fault) conformance.NewStoreFunc {
	return func(_ testing.TB, opts conformance.Options) conformance.Instance {
		clock := new(conformance.ManualClock)
		return conformance.Instance{
			Store: brokenstores.New(fault, opts.Capacity, clock.Now),
			Clock: clock,
		}
	}
}

// TestRunPassesACorrectStore is the control for TestBrokenStoresAreCaught:
// without a fault, the store they all start from passes, so each failure
// there comes from its fault alone. It also shows that a store offering
// none of the optional capabilities passes.
func TestRunPassesACorrectStore(t *testing.T) {
	t.Parallel()
	conformance.Run(t, harness(brokenstores.None))
}

// runningClock stands in for a database clock: besides Advance, it runs
// with real time, as a server's clock runs between requests.
type runningClock struct {
	conformance.ManualClock
	origin time.Time
}

func newRunningClock() *runningClock { return &runningClock{origin: time.Now()} }

func (c *runningClock) Now() time.Duration {
	return c.ManualClock.Now() + time.Since(c.origin)
}

// TestRunPassesACorrectStoreOnARunningClock checks the suite's inexact path
// (ExactTime false), the one a database store takes: durations are bounds,
// and a correct store whose clock keeps running passes.
func TestRunPassesACorrectStoreOnARunningClock(t *testing.T) {
	t.Parallel()
	conformance.Run(t, func(_ testing.TB, opts conformance.Options) conformance.Instance {
		clock := newRunningClock()
		return conformance.Instance{
			Store:   brokenstores.New(brokenstores.None, opts.Capacity, clock.Now),
			Advance: clock.Advance,
		}
	})
}
