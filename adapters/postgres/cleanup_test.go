package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// An expired row keeps its capacity slot until cleanup deletes it; its own
// key renews in place without a new slot.
func TestExpiredRowKeepsItsSlotUntilCleanup(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{RowsPerShard: 1})
	p := policy(t, "slot", 1, time.Minute)
	checks := f.checksInShard(t, p, 42, 2)
	old, next := checks[0], checks[1]
	requireAllowed(t, admit(t, f.store, old))
	shift(t, f.db.Pool, time.Hour)

	requireDenied(t, admit(t, f.store, next), 0, domain.StorageCapacity)
	require.Equal(t, int64(1), f.ledger(t, 42))
	requireAllowed(t, admit(t, f.store, old))
	shift(t, f.db.Pool, time.Hour)

	removed, err := f.store.CleanupExpired(context.Background(), 10)
	require.NoError(t, err)
	require.Equal(t, 1, removed)
	require.Zero(t, f.ledger(t, 42))
	requireAllowed(t, admit(t, f.store, next))
	require.Equal(t, int64(1), f.ledger(t, 42))
}

// Cleanup deletes expired rows only, skips the ones an admission holds, and
// stops at its maximum.
func TestCleanupSkipsLockedAndActiveRows(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	ctx := context.Background()
	p := policy(t, "cleanup", 5, time.Minute)
	var expired []domain.Check
	for i := range 4 {
		c := f.check(p, fmt.Sprintf("expired-%d", i))
		requireAllowed(t, admit(t, f.store, c))
		expired = append(expired, c)
	}
	shift(t, f.db.Pool, time.Hour)
	active := []domain.Check{f.check(p, "active-0"), f.check(p, "active-1")}
	requireAllowed(t, admit(t, f.store, active...))

	tx := f.hold(t)
	lockRow(t, tx, expired[0])
	removed, err := f.store.CleanupExpired(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, 2, removed)
	removed, err = f.store.CleanupExpired(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, removed, "the locked row is skipped, not waited for")
	_, ok := f.stored(t, expired[0])
	require.True(t, ok)
	for _, c := range active {
		_, ok := f.stored(t, c)
		require.True(t, ok, "an active row is never deleted")
	}
	require.NoError(t, tx.Rollback(ctx))

	removed, err = f.store.CleanupExpired(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, removed)
	require.Equal(t, int64(2), f.rowCount(t))
	var total int64
	require.NoError(t, f.db.Pool.QueryRow(ctx, "SELECT sum(row_count) FROM runlimit_capacity_shards").Scan(&total))
	require.Equal(t, int64(2), total)
}

// An expired row that an admission renews in place is active again, and
// cleanup leaves it alone.
func TestCleanupKeepsARenewedRow(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	ctx := context.Background()
	p := policy(t, "renewed", 5, time.Minute)
	c := f.check(p, "c")
	requireAllowed(t, admit(t, f.store, c))
	shift(t, f.db.Pool, time.Hour)
	requireAllowed(t, admit(t, f.store, c))

	removed, err := f.store.CleanupExpired(ctx, 10)
	require.NoError(t, err)
	require.Zero(t, removed)
	got, ok := f.stored(t, c)
	require.True(t, ok)
	require.Equal(t, int64(1), got.Used)
}

func TestCleanupArguments(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	removed, err := f.store.CleanupExpired(context.Background(), 0)
	require.NoError(t, err)
	require.Zero(t, removed)
	_, err = f.store.CleanupExpired(context.Background(), -1)
	require.ErrorIs(t, err, postgres.ErrNegativeMax)
	var me *postgres.MaintenanceError
	require.ErrorAs(t, err, &me)
	require.False(t, me.MayHaveRemovedRows())
	require.False(t, ports.MayHaveConsumedQuota(err))
}

// A cleanup error says whether rows may have been removed: not when the
// server rejected the delete itself, possibly when COMMIT failed.
func TestCleanupErrorSaysWhetherRowsMayHaveBeenRemoved(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		trigger string
		removed bool
	}{
		{"delete fails", `CREATE TRIGGER zz_test_fail AFTER DELETE ON runlimit_fixed_windows
			FOR EACH STATEMENT EXECUTE FUNCTION test_fail()`, false},
		{"commit fails", `CREATE CONSTRAINT TRIGGER zz_test_fail AFTER DELETE ON runlimit_fixed_windows
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_fail()`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, postgres.Config{})
			ctx := context.Background()
			p := policy(t, "cleanup.fail", 5, time.Minute)
			c := f.check(p, "c")
			requireAllowed(t, admit(t, f.store, c))
			shift(t, f.db.Pool, time.Hour)
			_, err := f.db.Pool.Exec(ctx, `CREATE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN RAISE EXCEPTION 'injected failure'; END $$;`)
			require.NoError(t, err)
			_, err = f.db.Pool.Exec(ctx, tt.trigger)
			require.NoError(t, err)

			_, err = f.store.CleanupExpired(ctx, 10)
			var me *postgres.MaintenanceError
			require.ErrorAs(t, err, &me)
			require.Equal(t, tt.removed, me.MayHaveRemovedRows())
			var dbErr *postgres.DatabaseError
			require.ErrorAs(t, err, &dbErr)
			require.Equal(t, "P0001", dbErr.Code)
			_, ok := f.stored(t, c)
			require.True(t, ok)
			requireNoneAcquired(t, f.db.Pool)
		})
	}
}

// The cleanup statement walks the expiry index rather than the table.
func TestCleanupUsesTheExpiryIndex(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	ctx := context.Background()
	_, err := f.db.Pool.Exec(ctx, `INSERT INTO runlimit_fixed_windows
		SELECT 'p', 's', sha256(int4send(i)), sha256(int4send(-i)),
		       now() - interval '2 hours' + i * interval '1 second',
		       now() - interval '1 hour' + i * interval '1 second', 1
		FROM generate_series(1, 5000) AS i`)
	require.NoError(t, err)
	_, err = f.db.Pool.Exec(ctx, "ANALYZE runlimit_fixed_windows")
	require.NoError(t, err)
	rows, err := f.db.Pool.Query(ctx, "EXPLAIN (COSTS OFF) "+f.store.SQLCleanup(), 100)
	require.NoError(t, err)
	var plan string
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan += line + "\n"
	}
	require.NoError(t, rows.Err())
	require.Contains(t, plan, "runlimit_fixed_windows_expiry_idx", plan)
	require.NotContains(t, plan, "Seq Scan", plan)

	removed, err := f.store.CleanupExpired(ctx, 1000)
	require.NoError(t, err)
	require.Equal(t, 1000, removed)
	require.Equal(t, int64(4000), f.rowCount(t))
}

// The database itself refuses a shard's 65,537th row, whoever inserts it,
// and storage keys cannot be changed under the ledger.
func TestLedgerHardMaximumAndImmutableKeys(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	ctx := context.Background()
	// Shard 0: first fingerprint byte 0x00 and first subject byte 0x00.
	_, err := f.db.Pool.Exec(ctx, `INSERT INTO runlimit_fixed_windows
		SELECT 'p', 's', '\x00'::bytea || substr(sha256(int4send(i)), 2), '\x00'::bytea || substr(sha256(int4send(-i)), 2),
		       now(), now() + interval '1 hour', 1
		FROM generate_series(1, 65536) AS i`)
	require.NoError(t, err)
	require.Equal(t, int64(65536), f.ledger(t, 0))

	_, err = f.db.Pool.Exec(ctx, `INSERT INTO runlimit_fixed_windows VALUES
		('p', 's', '\x00'::bytea || substr(sha256('one more'), 2), '\x00'::bytea || substr(sha256('x'), 2),
		 now(), now() + interval '1 hour', 1)`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "23514", pgErr.Code) // check_violation
	require.Equal(t, "runlimit_capacity_shards_hard_max", pgErr.ConstraintName)
	require.Equal(t, int64(65536), f.ledger(t, 0))

	_, err = f.db.Pool.Exec(ctx, `UPDATE runlimit_fixed_windows SET subject_key = '\x01'::bytea || substr(subject_key, 2)
		WHERE config_fingerprint = '\x00'::bytea || substr(sha256(int4send(1)), 2)`)
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "23514", pgErr.Code) // check_violation
	require.Equal(t, "runlimit_fixed_windows_immutable_storage_key", pgErr.ConstraintName)
	require.Equal(t, int64(65536), f.ledger(t, 0))

	_, err = f.db.Pool.Exec(ctx, "TRUNCATE runlimit_fixed_windows")
	require.NoError(t, err)
	require.Zero(t, f.ledger(t, 0))
}
