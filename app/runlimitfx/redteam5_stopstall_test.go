package runlimitfx_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// TestStopIsNotHeldByACollectionStuckOnTheDatabase: a session holding the
// capacity ledger locked makes a metrics collection wait in the store's
// Stats, for as long as the store's operation budget allows. The
// application's OnStop must not wait for that collection: it ends within
// its own deadline, with the Runtime closed, while the lock is still held.
func TestStopIsNotHeldByACollectionStuckOnTheDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	tel := newTelemetry(t)
	cfg := wiring.Config{
		Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(db.URL),
		KeySecret: wiring.NewSecret(testSecret), CleanupInterval: -1,
	}
	// A budget far beyond the test, so that only the lock's release could
	// end the stuck read.
	cfg.Postgres.OperationTimeout = time.Minute
	var runtime *wiring.Runtime
	fxApp := fxtest.New(t, runlimitfx.Module, fx.Supply(cfg), tel.supply, fx.Populate(&runtime))
	fxApp.RequireStart()

	// A hostile session locks the ledger, which Stats reads.
	ctx := context.Background()
	release := db.LockTable(t, "runlimit_capacity_shards")

	collected := make(chan error, 1)
	go func() {
		var rm metricdata.ResourceMetrics
		collected <- tel.reader.Collect(context.Background(), &rm)
	}()
	// Wait until the collection's read is waiting on the lock.
	require.Eventually(t, func() bool {
		var waiting bool
		err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%runlimit_capacity_shards%')`).Scan(&waiting)
		return err == nil && waiting
	}, time.Minute, 10*time.Millisecond, "the collection never reached the locked ledger")

	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- fxApp.Stop(stopCtx) }()
	select {
	case err := <-stopped:
		require.NoError(t, err, "OnStop did not finish within its deadline")
	case <-stopCtx.Done():
		release()
		t.Fatalf("OnStop waited on a collection stuck on a locked table past its deadline")
	}
	require.ErrorIs(t, runtime.Ready(ctx), wiring.ErrClosed)
	release()
	require.NoError(t, <-collected)
}
