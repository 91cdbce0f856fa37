package wiring_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// TestCloseKeepsItsDeadlineWhileAdmissionsHoldConnections: Close closed
// the pool it opened from Config.DatabaseURL before returning, and
// pgxpool's Close waits for every connection in use: with an admission
// waiting on a lock (up to Postgres.OperationTimeout, a minute at most,
// after an acquire timeout as long), Close ignored its context, and an
// fx stop or a host's shutdown deadline was spent in it. Close now
// returns an error matching its context when that ends first, and the
// pool closes once the admissions have let go of it, as a host store's
// blocking Close already did.
func TestCloseKeepsItsDeadlineWhileAdmissionsHoldConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	r, err := wiring.Open(ctx, wiring.Config{
		Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(db.URL), SecretEnv: setEnv(t, testSecret),
		Postgres: postgres.Config{OperationTimeout: postgres.MaxTimeout}, CleanupInterval: -1,
	})
	require.NoError(t, err)
	p := loginPolicy(t, "auth.poolclose")
	check := domain.NewCheck(p, r.KeyHasher().KeyString(p, "alice@example.test"))

	// Another session holds the key's advisory lock, so the admission
	// waits with a connection of the Runtime's pool.
	release := holdLock(t, db, check)
	defer release()
	checked := make(chan error, 1)
	go func() {
		_, err := r.Limiter().Check(ctx, check)
		checked <- err
	}()
	awaitLockWait(t, db)

	closed := make(chan error, 1)
	go func() { closed <- r.Close(doneContext()) }()
	select {
	case err := <-closed:
		require.ErrorIs(t, err, context.Canceled, "Close says it did not wait for the pool")
	case <-time.After(stuck):
		// Only a guard against hanging the run: a Close that keeps its
		// deadline returns at once.
		release()
		t.Fatal("Close waited for the admission holding a connection, past its context")
	}
	release()
	require.NoError(t, <-checked, "the admission in flight finishes")
	require.NoError(t, r.Close(ctx), "a later Close waits for the pool")
	require.Error(t, wiring.PoolOf(r).Ping(ctx), "the pool is closed")
}
