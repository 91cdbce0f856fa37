package mapstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/conformance"
	"github.com/runlimit/runlimit/examples/mapstore"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	conformance.Run(t, func(t testing.TB, opts conformance.Options) conformance.Instance {
		clock := new(conformance.ManualClock)
		store, err := mapstore.New(mapstore.Config{Capacity: opts.Capacity, Clock: clock.Now})
		require.NoError(t, err)
		return conformance.Instance{Store: store, Clock: clock}
	})
}
