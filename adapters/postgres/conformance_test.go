package postgres_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/conformance"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/ports"
)

// TestConformance runs the shared suite with a fresh store per case, each
// on an empty database of its own while the case runs. Capacity is the rows
// per ledger shard, and ShardOf tells the suite which shard a key lands in.
// Time moves by shifting every stored window back; the database clock keeps
// running, so durations are bounds.
func TestConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, postgres.Locked)
}

// TestConformanceOptimistic runs the suite on stores whose single checks
// take the optimistic protocol; its batches are the locked protocol's.
func TestConformanceOptimistic(t *testing.T) {
	t.Parallel()
	runConformance(t, postgres.Optimistic)
}

func runConformance(t *testing.T, protocol postgres.Protocol) {
	dbs := newDatabases(t)
	conformance.Run(t, func(t testing.TB, opts conformance.Options) conformance.Instance {
		db := dbs.lend(t)
		cfg := postgres.Config{RowsPerShard: opts.Capacity, MaxBatchSize: opts.MaxBatchSize, Protocol: protocol}
		store, err := postgres.New(db.Pool, cfg)
		require.NoError(t, err)
		return conformance.Instance{
			Store:       store,
			Advance:     func(t testing.TB, d time.Duration) { shift(t, db.Pool, d) },
			PartitionOf: postgres.ShardOf,
			// A second replica of a service: a Store of its own, with a pool
			// of its own, on the same database and schema.
			OpenReplica: func(t testing.TB) ports.Store {
				replica, err := postgres.New(db.NewPool(t, nil), cfg)
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, replica.Close()) })
				return replica
			},
			Require: []conformance.Capability{
				conformance.CheckAdmitter, conformance.Cleaner, conformance.StatsReporter, conformance.Closer,
			},
		}
	})
}

// databases lends each case a migrated database, emptied after the case
// before the next one gets it: cloning and dropping a database per case
// cost most of the suite's time. There are a few more databases than cases
// run at once; a case waits for one when there are not.
type databases chan *pgtest.Database

func newDatabases(t *testing.T) databases {
	t.Helper()
	n := min(runtime.GOMAXPROCS(0)+1, 8)
	dbs := make(databases, n)
	for range n {
		dbs <- pgtest.New(t)
	}
	return dbs
}

// lend returns a database for the case t, and takes it back when the case
// ends. The table's TRUNCATE trigger empties the capacity ledger with it.
// A database that cannot be emptied is not lent again.
func (dbs databases) lend(t testing.TB) *pgtest.Database {
	t.Helper()
	db := <-dbs
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := db.Pool.Exec(ctx, "TRUNCATE runlimit_fixed_windows"); err != nil {
			t.Errorf("emptying the database for the next case: %v", err)
			return
		}
		dbs <- db
	})
	return db
}
