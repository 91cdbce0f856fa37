package conformance_test

import (
	"testing"

	"github.com/runlimit/runlimit/conformance"
	"github.com/runlimit/runlimit/conformance/internal/brokenstores"
)

// harness builds the suite's own fixture store with fault on a manual clock.
// The store implements none of the optional capabilities.
func harness(fault brokenstores.Fault) conformance.NewStoreFunc {
	return func(_ testing.TB, opts conformance.Options) conformance.Instance {
		clock := new(conformance.ManualClock)
		return conformance.Instance{
			Store:     brokenstores.New(fault, opts.Capacity, clock.Now),
			Advance:   clock.Advance,
			ExactTime: true,
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
