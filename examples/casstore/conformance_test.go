package casstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/conformance"
	"github.com/runlimit/runlimit/examples/casstore"
	"github.com/runlimit/runlimit/ports"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	conformance.Run(t, func(t testing.TB, opts conformance.Options) conformance.Instance {
		clock := new(conformance.ManualClock)
		store, err := casstore.New(casstore.Config{Capacity: opts.Capacity, MaxBatchSize: opts.MaxBatchSize, Clock: clock.Now})
		require.NoError(t, err)
		return conformance.Instance{
			Store: store,
			Clock: clock,
			// A second replica over the same rows.
			OpenReplica: func(testing.TB) ports.Store { return store.Replica() },
			Require: []conformance.Capability{
				conformance.CheckAdmitter, conformance.Cleaner, conformance.StatsReporter,
			},
		}
	})
}
