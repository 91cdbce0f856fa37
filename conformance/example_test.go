package conformance_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/conformance"
	"github.com/runlimit/runlimit/examples/mapstore"
)

// An adapter proves itself with one test: Run calls the factory for a fresh
// store in every case, and a fake clock lets the suite end windows without
// sleeping. This is the whole conformance test of examples/mapstore; a
// database store would instead shift its stored window times back in
// Advance and leave ExactTime false.
func Example_adapter() {
	_ = func(t *testing.T) { // func TestConformance(t *testing.T) in your adapter's package
		conformance.Run(t, func(t testing.TB, opts conformance.Options) conformance.Instance {
			clock := new(conformance.ManualClock)
			store, err := mapstore.New(mapstore.Config{Capacity: opts.Capacity, Clock: clock.Now})
			require.NoError(t, err)
			return conformance.Instance{Store: store, Advance: clock.Advance, ExactTime: true}
		})
	}
}
