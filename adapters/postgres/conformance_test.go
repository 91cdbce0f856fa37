package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/conformance"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// TestConformance runs the shared suite against a fresh database per case.
// Capacity is the rows per ledger shard, and ShardOf tells the suite which
// shard a key lands in. Time moves by shifting every stored window back;
// the database clock keeps running, so durations are bounds.
func TestConformance(t *testing.T) {
	t.Parallel()
	conformance.Run(t, func(t testing.TB, opts conformance.Options) conformance.Instance {
		db := pgtest.New(t)
		store, err := postgres.New(db.Pool, postgres.Config{RowsPerShard: opts.Capacity, MaxBatchSize: opts.MaxBatchSize})
		require.NoError(t, err)
		return conformance.Instance{
			Store:       store,
			Advance:     func(t testing.TB, d time.Duration) { shift(t, db.Pool, d) },
			PartitionOf: postgres.ShardOf,
			Require: []conformance.Capability{
				conformance.CheckAdmitter, conformance.Cleaner, conformance.StatsReporter, conformance.Closer,
			},
		}
	})
}
