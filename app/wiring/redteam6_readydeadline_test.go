package wiring_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/ports"
)

// TestTightDeadlinesUnderAHeldLockAreTheCallersDeadline: a readiness probe
// or a check whose deadline (1 ms to a second) passes while another role
// holds one of Runlimit's tables locked fails closed with an error that
// matches context.DeadlineExceeded, whether the client's deadline or the
// server's timeout set from it ended the wait: a probe's handler and a
// login path tell their own deadline from a broken database by
// errors.Is alone.
func TestTightDeadlinesUnderAHeldLockAreTheCallersDeadline(t *testing.T) {
	t.Parallel()
	for _, table := range []string{"runlimit_schema_version", "runlimit_fixed_windows", "runlimit_capacity_shards"} {
		t.Run(table, func(t *testing.T) {
			t.Parallel()
			db := pgtest.New(t)
			pool := db.NewPool(t, func(c *pgxpool.Config) { c.MaxConns = 2 })
			cfg := wiring.Config{Backend: wiring.BackendPostgres, Pool: wiring.BorrowPool(pool),
				KeySecret: wiring.NewSecret(testSecret), CleanupInterval: -1}
			// A budget far beyond the deadlines: only the caller's deadline
			// sets the server's timeouts.
			cfg.Postgres.OperationTimeout = time.Minute
			ctx := context.Background()
			r, err := wiring.Open(ctx, cfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = r.Close(context.Background()) })
			p := domain.MustPolicy("auth.login", "identity", 1000, time.Hour)
			c := domain.NewCheck(p, r.KeyHasher().KeyString(p, "someone"))
			_, err = r.Limiter().Check(ctx, c)
			require.NoError(t, err)

			release := db.LockTable(t, table)
			defer release()
			for _, d := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, time.Second} {
				dctx, cancel := context.WithTimeout(ctx, d)
				err := r.Ready(dctx)
				cancel()
				require.Error(t, err, "deadline %v", d)
				require.ErrorIs(t, err, context.DeadlineExceeded, "deadline %v: %v", d, err)

				if table == "runlimit_schema_version" {
					continue // admissions do not read it
				}
				dctx, cancel = context.WithTimeout(ctx, d)
				_, err = r.Limiter().Check(dctx, c)
				cancel()
				require.Error(t, err, "deadline %v", d)
				require.ErrorIs(t, err, context.DeadlineExceeded, "deadline %v: %v", d, err)
				require.False(t, ports.MayHaveConsumedQuota(err), "deadline %v: %v", d, err)
			}
		})
	}
}
