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

// column is one column of a table as the catalog describes it.
type column struct {
	Name      string
	Type      string
	NotNull   bool
	Generated bool
}

// constraint is one constraint of a table: its name and kind (c check, f
// foreign key, p primary key) and, for keys, their columns.
type constraint struct {
	Name    string
	Kind    string
	Columns []string
}

// The facts of SPEC section 5 "Schema names", as the catalog shows them.
var (
	runlimitWindowColumns = []column{
		{"policy_id", "text", true, false},
		{"scope_id", "text", true, false},
		{"config_fingerprint", "bytea", true, false},
		{"subject_key", "bytea", true, false},
		{"window_started_at", "timestamp with time zone", true, false},
		{"window_expires_at", "timestamp with time zone", true, false},
		{"used", "bigint", true, false},
		{"capacity_shard", "smallint", true, true},
	}
	runlimitWindowConstraints = []constraint{
		{"runlimit_fixed_windows_capacity_shard_fkey", "f", []string{"capacity_shard"}},
		{"runlimit_fixed_windows_fingerprint_size", "c", nil},
		{"runlimit_fixed_windows_pkey", "p", []string{"config_fingerprint", "subject_key"}},
		{"runlimit_fixed_windows_policy_id_size", "c", nil},
		{"runlimit_fixed_windows_positive_usage", "c", nil},
		{"runlimit_fixed_windows_scope_id_size", "c", nil},
		{"runlimit_fixed_windows_subject_key_size", "c", nil},
		{"runlimit_fixed_windows_valid_window", "c", nil},
	}
	runlimitLedgerColumns = []column{
		{"capacity_shard", "smallint", true, false},
		{"row_count", "bigint", true, false},
	}
	runlimitLedgerConstraints = []constraint{
		{"runlimit_capacity_shards_hard_max", "c", nil},
		{"runlimit_capacity_shards_nonnegative_count", "c", nil},
		{"runlimit_capacity_shards_pkey", "p", []string{"capacity_shard"}},
		{"runlimit_capacity_shards_valid_shard", "c", nil},
	}
)

// requireRunlimitSchema requires schema to hold Runlimit's schema as SPEC
// section 5 names it: tables, columns, the generated shard column and its
// foreign key, every constraint by name, the expiry index, fillfactor 80,
// 256 ledger rows, and the triggers' SQLSTATEs and constraint names, with
// trigger functions that run as their owner with a pinned search_path and
// find the ledger whatever the session's search_path. It changes nothing:
// every probe runs in a transaction it rolls back.
func requireRunlimitSchema(t *testing.T, conn *pgx.Conn, schema string) {
	t.Helper()
	ctx := context.Background()
	windows := pgx.Identifier{schema, "runlimit_fixed_windows"}.Sanitize()
	ledger := pgx.Identifier{schema, "runlimit_capacity_shards"}.Sanitize()

	require.Equal(t, runlimitWindowColumns, columns(t, conn, windows), "the counter table's columns")
	require.Equal(t, runlimitWindowConstraints, constraints(t, conn, windows), "the counter table's constraints")
	require.Equal(t, runlimitLedgerColumns, columns(t, conn, ledger), "the ledger's columns")
	require.Equal(t, runlimitLedgerConstraints, constraints(t, conn, ledger), "the ledger's constraints")

	var references []string
	require.NoError(t, conn.QueryRow(ctx, `SELECT ARRAY(SELECT a.attname::text FROM pg_catalog.pg_attribute AS a
			WHERE a.attrelid = r.confrelid AND a.attnum = ANY (r.confkey))
		FROM pg_catalog.pg_constraint AS r
		WHERE r.conrelid = $1::pg_catalog.regclass AND r.conname = 'runlimit_fixed_windows_capacity_shard_fkey'
		  AND r.confrelid = $2::pg_catalog.regclass`, windows, ledger).Scan(&references))
	require.Equal(t, []string{"capacity_shard"}, references, "the shard's foreign key references the ledger's shard")

	var index string
	require.NoError(t, conn.QueryRow(ctx, `SELECT pg_catalog.pg_get_indexdef(i.indexrelid) FROM pg_catalog.pg_index AS i
		JOIN pg_catalog.pg_class AS c ON c.oid = i.indexrelid
		WHERE i.indrelid = $1::pg_catalog.regclass AND c.relname = 'runlimit_fixed_windows_expiry_idx'`, windows).Scan(&index))
	require.Regexp(t, `USING btree \(window_expires_at\)$`, index)

	var options []string
	require.NoError(t, conn.QueryRow(ctx, `SELECT COALESCE(c.reloptions, '{}') FROM pg_catalog.pg_class AS c
		WHERE c.oid = $1::pg_catalog.regclass`, windows).Scan(&options))
	require.Equal(t, []string{"fillfactor=80"}, options)

	var shards, lowest, highest, nonzero int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*), min(capacity_shard), max(capacity_shard)
		FROM `+ledger).Scan(&shards, &lowest, &highest))
	require.Equal(t, []int64{256, 0, 255}, []int64{shards, lowest, highest}, "the ledger has one row per shard")

	// Every trigger function on the table runs as its owner with a pinned
	// search_path.
	rows, err := conn.Query(ctx, `SELECT p.oid::pg_catalog.regprocedure::text, p.prosecdef, COALESCE(p.proconfig, '{}')
		FROM pg_catalog.pg_trigger AS g JOIN pg_catalog.pg_proc AS p ON p.oid = g.tgfoid
		WHERE g.tgrelid = $1::pg_catalog.regclass AND NOT g.tgisinternal`, windows)
	require.NoError(t, err)
	type function struct {
		Name     string
		Definer  bool
		Settings []string
	}
	functions, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (function, error) {
		var f function
		return f, r.Scan(&f.Name, &f.Definer, &f.Settings)
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(functions), 3, "insert, delete and storage key triggers")
	for _, f := range functions {
		require.True(t, f.Definer, "%s is SECURITY DEFINER", f.Name)
		require.Equal(t, []string{"search_path=pg_catalog, pg_temp"}, f.Settings, f.Name)
	}

	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, tx.Rollback(ctx)) }()
	// A session that searches nowhere still counts into the table's own
	// ledger. The probes start from an empty table: its rows are deleted,
	// through the triggers, until the rollback.
	_, err = tx.Exec(ctx, "SET LOCAL search_path = pg_catalog, pg_temp")
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "DELETE FROM "+windows)
	require.NoError(t, err)
	require.NoError(t, tx.QueryRow(ctx, "SELECT count(*) FILTER (WHERE row_count <> 0) FROM "+ledger).Scan(&nonzero))
	require.Zero(t, nonzero, "deleting every row empties every shard")
	insert := func(fp, sk byte) error {
		return probe(ctx, tx, `INSERT INTO `+windows+` (policy_id, scope_id, config_fingerprint, subject_key,
			window_started_at, window_expires_at, used)
			VALUES ('p', 's', pg_catalog.decode(pg_catalog.repeat(pg_catalog.lpad(pg_catalog.to_hex($1::int), 2, '0'), 32), 'hex'),
			        pg_catalog.decode(pg_catalog.repeat(pg_catalog.lpad(pg_catalog.to_hex($2::int), 2, '0'), 32), 'hex'),
			        '2030-01-01', '2030-01-02', 1)`, int(fp), int(sk))
	}
	count := func(shard int) int64 {
		var n int64
		require.NoError(t, tx.QueryRow(ctx, "SELECT row_count FROM "+ledger+" WHERE capacity_shard = $1", shard).Scan(&n))
		return n
	}
	// Shard 0x12 ^ 0x34 = 0x26 = 38.
	require.NoError(t, insert(0x12, 0x34))
	require.Equal(t, int64(1), count(38), "an insert counts into its shard")
	var generated int16
	require.NoError(t, tx.QueryRow(ctx, "SELECT capacity_shard FROM "+windows+
		" WHERE config_fingerprint = pg_catalog.decode(pg_catalog.repeat('12', 32), 'hex')").Scan(&generated))
	require.Equal(t, int16(38), generated, "the generated column is the first bytes' XOR")

	requireProbe(t, probe(ctx, tx, "UPDATE "+windows+" SET subject_key = pg_catalog.decode(pg_catalog.repeat('35', 32), 'hex')"),
		"23514", "runlimit_fixed_windows_immutable_storage_key", "changing a storage key")
	requireProbe(t, probe(ctx, tx, "UPDATE "+ledger+" SET row_count = 65536 WHERE capacity_shard = 39"), "", "", "a full shard")
	requireProbe(t, insert(0x12, 0x35), "23514", "runlimit_capacity_shards_hard_max", "the 65,537th row of a shard")
	requireProbe(t, probe(ctx, tx, "UPDATE "+ledger+" SET row_count = 0 WHERE capacity_shard = 38"), "", "", "a ledger that lost a row")
	requireProbe(t, probe(ctx, tx, "DELETE FROM "+windows+" WHERE capacity_shard = 38"),
		"23514", "runlimit_capacity_shards_nonnegative_count", "a count below zero")
	requireProbe(t, probe(ctx, tx, "DELETE FROM "+ledger+" WHERE capacity_shard = 40"), "", "", "a ledger without shard 40")
	requireProbe(t, insert(0x12, 0x3a), "23503", "", "a row of a shard without a ledger row") // foreign_key_violation
	var kept int
	require.NoError(t, tx.QueryRow(ctx, "SELECT count(*) FROM "+windows+" WHERE capacity_shard = 38").Scan(&kept))
	require.Equal(t, 1, kept, "the failed delete was undone")
}

// probe runs sql in a savepoint of tx, rolled back when it fails, and
// returns its error.
func probe(ctx context.Context, tx pgx.Tx, sql string, args ...any) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, sql, args...); err != nil {
		_ = sp.Rollback(ctx)
		return err
	}
	return sp.Commit(ctx)
}

// requireProbe requires err to be nil when code is empty, and otherwise a
// server error of SQLSTATE code naming constraint (any, when empty).
func requireProbe(t *testing.T, err error, code, constraint, what string) {
	t.Helper()
	if code == "" {
		require.NoError(t, err, what)
		return
	}
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%s: want SQLSTATE %s, got %v", what, code, err)
	require.Equal(t, code, pgErr.Code, "%s: %v", what, err)
	if constraint != "" {
		require.Equal(t, constraint, pgErr.ConstraintName, what)
	}
}

func columns(t *testing.T, conn *pgx.Conn, table string) []column {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod),
			a.attnotnull, a.attgenerated = 's'
		FROM pg_catalog.pg_attribute AS a
		WHERE a.attrelid = $1::pg_catalog.regclass AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, table)
	require.NoError(t, err)
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (column, error) {
		var c column
		return c, r.Scan(&c.Name, &c.Type, &c.NotNull, &c.Generated)
	})
	require.NoError(t, err)
	return cs
}

func constraints(t *testing.T, conn *pgx.Conn, table string) []constraint {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT r.conname::text, r.contype::text,
			ARRAY(SELECT a.attname::text FROM pg_catalog.unnest(r.conkey) WITH ORDINALITY AS k(attnum, n)
			      JOIN pg_catalog.pg_attribute AS a ON a.attrelid = r.conrelid AND a.attnum = k.attnum
			      ORDER BY k.n)
		FROM pg_catalog.pg_constraint AS r
		WHERE r.conrelid = $1::pg_catalog.regclass AND r.contype <> 'n'
		ORDER BY 1`, table)
	require.NoError(t, err)
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (constraint, error) {
		var c constraint
		if err := r.Scan(&c.Name, &c.Kind, &c.Columns); err != nil {
			return c, err
		}
		if c.Kind == "c" {
			c.Columns = nil
		}
		return c, nil
	})
	require.NoError(t, err)
	return cs
}

// The schema this package builds, the schema a Rust Runlimit service
// leaves (written from SPEC's facts), and that schema once adopted all
// hold Runlimit's names and behaviour, in the default schema and in one of
// their own.
func TestSchemaHasRunlimitsNames(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{"public", "Rate_Limits"} {
		t.Run("go/"+schema, func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewEmpty(t)
			require.NoError(t, migrations.MigratePool(context.Background(), db.Pool, schema))
			requireRunlimitSchema(t, connect(t, db), schema)
		})
		t.Run("rust/"+schema, func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewEmpty(t)
			db.MigrateAsRust(t, schema)
			conn := connect(t, db)
			requireRunlimitSchema(t, conn, schema)
			require.NoError(t, migrations.MigratePool(context.Background(), db.Pool, schema))
			requireRunlimitSchema(t, conn, schema)
		})
	}
}
