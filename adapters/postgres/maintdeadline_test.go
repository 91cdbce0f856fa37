package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
)

// A caller whose deadline is 1 to 10 ms, on cleanup, Stats or Ready while
// another session holds the ledger lock they wait for (a ledger row, which
// cleanup's deletion must update; the ledger table, which Stats and Ready
// read), gets a [*postgres.MaintenanceError] that matches
// context.DeadlineExceeded and [postgres.ErrTimeout], and leaves nothing
// running on the server: every session of the store's application is
// idle, out of any transaction, or gone. A cleanup that says no rows were
// removed removed none; once the lock is gone, the same store serves the
// call and admits.
func TestMaintenanceDeadlineWhileALedgerLockIsHeld(t *testing.T) {
	t.Parallel()
	ops := []struct {
		name string
		lock func(t *testing.T, tx pgx.Tx, shard int)
		run  func(ctx context.Context, s *postgres.Store) error
	}{
		{"cleanup", lockLedgerRow, func(ctx context.Context, s *postgres.Store) error {
			_, err := s.CleanupExpired(ctx, 10)
			return err
		}},
		{"stats", lockLedger, func(ctx context.Context, s *postgres.Store) error {
			_, err := s.Stats(ctx)
			return err
		}},
		{"ready", lockLedger, func(ctx context.Context, s *postgres.Store) error { return s.Ready(ctx) }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := setup(t, postgres.Config{})
			p := policy(t, "maintenance.deadline", 5, time.Minute)
			for _, d := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond} {
				where := fmt.Sprintf("%s under a deadline of %v", op.name, d)
				app := fmt.Sprintf("deadline-%s-%d", op.name, d.Milliseconds())
				store, _ := f.newStore(t, postgres.Config{}, named(app))
				c := f.check(p, app)
				requireAllowed(t, admit(t, store, c))
				shift(t, f.db.Pool, time.Hour)
				// The connection has served the call once: the deadline
				// falls in the wait for the lock, not in a warm-up.
				require.NoError(t, store.Ready(ctx))
				if op.name != "cleanup" {
					require.NoError(t, op.run(ctx, store))
				}

				tx := f.hold(t)
				op.lock(t, tx, postgres.ShardOf(c.CounterKey()))
				short, cancel := context.WithTimeout(ctx, d)
				err := op.run(short, store)
				cancel()
				me := requireFailedClosed(t, err, op.name, where)
				require.ErrorIs(t, err, context.DeadlineExceeded, where)
				require.ErrorIs(t, err, postgres.ErrTimeout, where)
				require.True(t, me.Timeout, where)
				if op.name != "cleanup" {
					require.False(t, me.MayHaveRemoved, where)
				}
				// Nothing of the store's is left running on the server,
				// while the lock is still held.
				require.Eventually(t, func() bool { return busyBackendsOf(f, app) == 0 }, 10*time.Second, time.Millisecond,
					"%s: a statement or transaction of the store's is still running on the server", where)
				require.NoError(t, tx.Rollback(ctx))
				_, ok := f.stored(t, c)
				if !me.MayHaveRemoved {
					require.True(t, ok, "%s: the error says no rows were removed, but the cleanup removed one", where)
				}

				require.NoError(t, op.run(ctx, store), where)
				requireAllowed(t, admit(t, store, f.check(p, app+"/after")))
				requireLedgerExact(t, f, where)
			}
		})
	}
}

// lockLedgerRow locks the capacity ledger's row of shard in tx.
func lockLedgerRow(t *testing.T, tx pgx.Tx, shard int) {
	t.Helper()
	tag, err := tx.Exec(context.Background(), `SELECT FROM runlimit_capacity_shards WHERE capacity_shard = $1 FOR UPDATE`, shard)
	require.NoError(t, err)
	require.Equal(t, int64(1), tag.RowsAffected())
}

// lockLedger locks the whole capacity ledger in tx, against readers too.
func lockLedger(t *testing.T, tx pgx.Tx, _ int) {
	t.Helper()
	_, err := tx.Exec(context.Background(), "LOCK TABLE runlimit_capacity_shards IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
}

// busyBackendsOf counts the server sessions of application app that are
// running a statement or are inside a transaction; -1 if it cannot tell.
func busyBackendsOf(f *fixture, app string) int {
	n := -1
	err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_stat_activity
		WHERE datname = current_database() AND application_name = $1
		  AND (state IS DISTINCT FROM 'idle' OR xact_start IS NOT NULL)`, app).Scan(&n)
	if err != nil {
		return -1
	}
	return n
}
