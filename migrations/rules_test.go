package migrations_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
)

// The counter table refuses every row that breaks its rules, whoever writes
// it, each with the name of the constraint it breaks, and any change of a
// storage key.
func TestCounterRulesHoldForEveryWriter(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	require.NoError(t, migrations.MigratePool(context.Background(), db.Pool, ""))
	ctx := context.Background()
	const insert = `INSERT INTO runlimit_fixed_windows VALUES ($1, $2,
		decode(repeat('01', $3), 'hex'), decode(repeat('02', $4), 'hex'), $5::timestamptz, $6::timestamptz, $7)`
	type row struct {
		policy, scope  string
		fpLen, skLen   int
		start, expires string
		used           int64
	}
	valid := row{"p", "s", 32, 32, "2030-01-01", "2030-01-02", 1}
	for _, tc := range []struct {
		name       string
		change     func(*row)
		constraint string
	}{
		{"empty policy id", func(r *row) { r.policy = "" }, "runlimit_fixed_windows_policy_id_size"},
		{"policy id over 128 bytes", func(r *row) { r.policy = longID() }, "runlimit_fixed_windows_policy_id_size"},
		{"empty scope id", func(r *row) { r.scope = "" }, "runlimit_fixed_windows_scope_id_size"},
		{"scope id over 128 bytes", func(r *row) { r.scope = longID() }, "runlimit_fixed_windows_scope_id_size"},
		{"short fingerprint", func(r *row) { r.fpLen = 31 }, "runlimit_fixed_windows_fingerprint_size"},
		{"long subject key", func(r *row) { r.skLen = 33 }, "runlimit_fixed_windows_subject_key_size"},
		{"window ending at its start", func(r *row) { r.expires = r.start }, "runlimit_fixed_windows_valid_window"},
		{"window ending before its start", func(r *row) { r.expires = "2029-12-31" }, "runlimit_fixed_windows_valid_window"},
		{"nothing used", func(r *row) { r.used = 0 }, "runlimit_fixed_windows_positive_usage"},
	} {
		r := valid
		tc.change(&r)
		_, err := db.Pool.Exec(ctx, insert, r.policy, r.scope, r.fpLen, r.skLen, r.start, r.expires, r.used)
		requireConstraint(t, err, "23514", tc.constraint, tc.name)
	}
	var count int64
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM runlimit_fixed_windows").Scan(&count))
	require.Zero(t, count)

	// A valid row goes in; updates keep the window rules, and keys never
	// change.
	_, err := db.Pool.Exec(ctx, insert, valid.policy, valid.scope, valid.fpLen, valid.skLen, valid.start, valid.expires, valid.used)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, "UPDATE runlimit_fixed_windows SET used = 0")
	requireConstraint(t, err, "23514", "runlimit_fixed_windows_positive_usage", "update to nothing used")
	_, err = db.Pool.Exec(ctx, "UPDATE runlimit_fixed_windows SET window_expires_at = window_started_at")
	requireConstraint(t, err, "23514", "runlimit_fixed_windows_valid_window", "update to an empty window")
	for _, column := range []string{"config_fingerprint", "subject_key"} {
		_, err = db.Pool.Exec(ctx, "UPDATE runlimit_fixed_windows SET "+column+" = decode(repeat('03', 32), 'hex')")
		requireConstraint(t, err, "23514", "runlimit_fixed_windows_immutable_storage_key", "update of "+column)
	}
	_, err = db.Pool.Exec(ctx, "UPDATE runlimit_fixed_windows SET used = 2")
	require.NoError(t, err)
}

func requireConstraint(t *testing.T, err error, code, constraint, what string) {
	t.Helper()
	requireSQLState(t, err, code, what)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, constraint, pgErr.ConstraintName, what)
}

func longID() string {
	b := make([]byte, 129)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}

func requireSQLState(t *testing.T, err error, code, what string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%s: want a server error, got %v", what, err)
	require.Equal(t, code, pgErr.Code, "%s: %v", what, err)
}

// Inserts into one shard by writers that take no ledger lock first, as a
// host's own SQL may, never deadlock on the ledger row: each insert's
// foreign key check holds a FOR KEY SHARE lock on it, which the count's
// lock must not wait for. Two transactions here hold that lock first, as
// two inserts that both checked their key before either counted do.
func TestInsertsIntoOneShardNeverDeadlock(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	ctx := context.Background()
	require.NoError(t, migrations.MigratePool(ctx, db.Pool, ""))
	var txs [2]pgx.Tx
	for i := range txs {
		tx, err := db.Pool.Begin(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		_, err = tx.Exec(ctx, "SELECT FROM runlimit_capacity_shards WHERE capacity_shard = 3 FOR KEY SHARE")
		require.NoError(t, err)
		txs[i] = tx
	}
	// Fingerprints starting 0x01 and subject keys starting 0x02: shard 3.
	type result struct {
		tx  int
		err error
	}
	results := make(chan result, len(txs))
	for i, tx := range txs {
		go func() {
			_, err := tx.Exec(ctx, `INSERT INTO runlimit_fixed_windows VALUES ('p', 's',
				decode('01' || repeat(lpad(to_hex($1::int), 2, '0'), 31), 'hex'), decode(repeat('02', 32), 'hex'),
				now(), now() + interval '1 minute', 1)`, i)
			results <- result{i, err}
		}()
	}
	// One insert counts its row while the other waits for it; once the
	// first commits, the other counts its own.
	first := <-results
	require.NoError(t, first.err)
	select {
	case second := <-results:
		require.Fail(t, "both inserts finished while both transactions were open", "%v", second.err)
	default:
	}
	require.NoError(t, txs[first.tx].Commit(ctx))
	second := <-results
	require.NoError(t, second.err)
	require.NoError(t, txs[second.tx].Commit(ctx))
	var ledger, rows int64
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT row_count, (SELECT count(*) FROM runlimit_fixed_windows)
		FROM runlimit_capacity_shards WHERE capacity_shard = 3`).Scan(&ledger, &rows))
	require.Equal(t, int64(2), rows)
	require.Equal(t, rows, ledger)
}
