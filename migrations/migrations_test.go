package migrations_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// schema is what a test compares between databases: the runlimit tables,
// functions and triggers, and the ledger's row count.
type schema struct {
	Tables    []string
	Functions []string
	Triggers  []string
	Shards    int
}

func readSchema(t *testing.T, conn *pgx.Conn) schema {
	t.Helper()
	ctx := context.Background()
	var s schema
	list := func(sql string) []string {
		rows, err := conn.Query(ctx, sql)
		require.NoError(t, err)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return names
	}
	s.Tables = list(`SELECT tablename FROM pg_catalog.pg_tables
		WHERE schemaname = 'public' AND tablename LIKE 'runlimit%' ORDER BY 1`)
	s.Functions = list(`SELECT proname FROM pg_catalog.pg_proc
		WHERE pronamespace = 'public'::regnamespace AND proname LIKE 'runlimit%' ORDER BY 1`)
	s.Triggers = list(`SELECT tgname FROM pg_catalog.pg_trigger
		WHERE NOT tgisinternal AND tgname LIKE 'runlimit%' ORDER BY 1`)
	if slices.Contains(s.Tables, "runlimit_capacity_shards") {
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM runlimit_capacity_shards").Scan(&s.Shards))
	}
	return s
}

func connect(t *testing.T, db *pgtest.Database) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func version(t *testing.T, conn *pgx.Conn, table string) int32 {
	t.Helper()
	var v int32
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT version FROM "+table).Scan(&v))
	return v
}

func latest(t *testing.T) int32 {
	t.Helper()
	steps, err := migrations.SQL()
	require.NoError(t, err)
	return steps[len(steps)-1].Version
}

var wantSchema = schema{
	Tables: []string{"runlimit_capacity_shards", "runlimit_fixed_windows", "runlimit_schema_version"},
	Functions: []string{
		"runlimit_capacity_count_deleted", "runlimit_capacity_count_inserted",
		"runlimit_capacity_count_truncated", "runlimit_forbid_key_update",
		"runlimit_lock_counter",
	},
	Triggers: []string{
		"runlimit_capacity_delete", "runlimit_capacity_insert",
		"runlimit_capacity_truncate", "runlimit_fixed_windows_immutable_keys",
	},
	Shards: 256,
}

func TestMigrateFresh(t *testing.T) {
	t.Parallel()
	conn := connect(t, pgtest.NewEmpty(t))
	require.NoError(t, migrations.Migrate(context.Background(), conn))
	require.Equal(t, wantSchema, readSchema(t, conn))
	require.Equal(t, latest(t), version(t, conn, migrations.VersionTable))
}

func TestMigrateTwiceIsANoOp(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	conn := connect(t, db)
	ctx := context.Background()
	require.NoError(t, migrations.Migrate(ctx, conn))
	// A counter stored between the runs must survive the second one.
	_, err := conn.Exec(ctx, `INSERT INTO runlimit_fixed_windows VALUES
		('p', 's', decode(repeat('01', 32), 'hex'), decode(repeat('02', 32), 'hex'),
		 now(), now() + interval '1 minute', 3)`)
	require.NoError(t, err)

	require.NoError(t, migrations.MigratePool(ctx, db.Pool))
	require.Equal(t, wantSchema, readSchema(t, conn))
	require.Equal(t, latest(t), version(t, conn, migrations.VersionTable))
	var used, ledger int64
	require.NoError(t, conn.QueryRow(ctx, "SELECT used FROM runlimit_fixed_windows").Scan(&used))
	require.Equal(t, int64(3), used)
	require.NoError(t, conn.QueryRow(ctx, "SELECT rows FROM runlimit_capacity_shards WHERE shard = 3").Scan(&ledger))
	require.Equal(t, int64(1), ledger)
}

// hostMigrator is a host application's own tern history under its own
// version table.
func hostMigrator(t *testing.T, conn *pgx.Conn) *migrate.Migrator {
	t.Helper()
	m, err := migrate.NewMigrator(context.Background(), conn, "public.schema_version")
	require.NoError(t, err)
	m.AppendMigration("create accounts", "CREATE TABLE accounts (id bigint PRIMARY KEY)", "DROP TABLE accounts")
	m.AppendMigration("add email", "ALTER TABLE accounts ADD COLUMN email text", "ALTER TABLE accounts DROP COLUMN email")
	return m
}

func TestMigrateBesideHostHistory(t *testing.T) {
	t.Parallel()
	for _, order := range []string{"host first", "runlimit first"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			conn := connect(t, pgtest.NewEmpty(t))
			ctx := context.Background()
			host := func() { require.NoError(t, hostMigrator(t, conn).Migrate(ctx)) }
			runlimit := func() { require.NoError(t, migrations.Migrate(ctx, conn)) }
			if order == "host first" {
				host()
				runlimit()
			} else {
				runlimit()
				host()
			}
			// Each history is intact and knows only its own steps; running
			// both again changes nothing.
			host()
			runlimit()
			require.Equal(t, int32(2), version(t, conn, "public.schema_version"))
			require.Equal(t, latest(t), version(t, conn, migrations.VersionTable))
			require.Equal(t, wantSchema, readSchema(t, conn))
			var email bool
			require.NoError(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM information_schema.columns
				WHERE table_name = 'accounts' AND column_name = 'email')`).Scan(&email))
			require.True(t, email)
		})
	}
}

func TestSQLIsOrderedAndVendorable(t *testing.T) {
	t.Parallel()
	steps, err := migrations.SQL()
	require.NoError(t, err)
	require.Len(t, steps, 3)
	for i, st := range steps {
		require.Equal(t, int32(i+1), st.Version)
		require.NotEmpty(t, st.Up)
		require.NotEmpty(t, st.Down)
		require.NotContains(t, st.Up, "---- create above / drop below ----")
	}
	require.Equal(t, "001_fixed_windows.sql", steps[0].Name)
	require.Contains(t, steps[0].Up, "CREATE TABLE runlimit_fixed_windows")
	require.Contains(t, steps[1].Up, "CREATE TABLE runlimit_capacity_shards")
	require.Contains(t, steps[2].Up, "CREATE FUNCTION runlimit_lock_counter")

	// A host that vendors the steps into its own history gets the schema
	// Migrate builds (without Runlimit's version table).
	conn := connect(t, pgtest.NewEmpty(t))
	ctx := context.Background()
	for _, st := range steps {
		_, err := conn.Exec(ctx, st.Up)
		require.NoError(t, err, st.Name)
	}
	want := wantSchema
	want.Tables = []string{"runlimit_capacity_shards", "runlimit_fixed_windows"}
	require.Equal(t, want, readSchema(t, conn))

	// FS holds the same files tern loads.
	names, err := migrate.FindMigrations(migrations.FS())
	require.NoError(t, err)
	require.Equal(t, []string{steps[0].Name, steps[1].Name, steps[2].Name}, names)
}

func TestDownStepsRevertAndReapply(t *testing.T) {
	t.Parallel()
	conn := connect(t, pgtest.NewEmpty(t))
	ctx := context.Background()
	m, err := migrate.NewMigrator(ctx, conn, migrations.VersionTable)
	require.NoError(t, err)
	require.NoError(t, m.LoadMigrations(migrations.FS()))
	require.NoError(t, m.Migrate(ctx))
	require.NoError(t, m.MigrateTo(ctx, 0))
	require.Equal(t, schema{Tables: []string{"runlimit_schema_version"}, Functions: []string{}, Triggers: []string{}}, readSchema(t, conn))
	require.NoError(t, migrations.Migrate(ctx, conn))
	require.Equal(t, wantSchema, readSchema(t, conn))
}

// A table from before the capacity ledger keeps its rows, and the ledger
// starts out counting them exactly.
func TestLedgerStepCountsExistingRows(t *testing.T) {
	t.Parallel()
	conn := connect(t, pgtest.NewEmpty(t))
	ctx := context.Background()
	m, err := migrate.NewMigrator(ctx, conn, migrations.VersionTable)
	require.NoError(t, err)
	require.NoError(t, m.LoadMigrations(migrations.FS()))
	require.NoError(t, m.MigrateTo(ctx, 1))
	// 300 rows: first fingerprint byte i%7, first subject byte i%5, so the
	// shards are (i%7) XOR (i%5).
	_, err = conn.Exec(ctx, `INSERT INTO runlimit_fixed_windows
		SELECT 'p', 's',
		       decode(lpad(to_hex(i % 7), 2, '0') || lpad(to_hex(i), 62, '0'), 'hex'),
		       decode(lpad(to_hex(i % 5), 2, '0') || repeat('00', 31), 'hex'),
		       now(), now() + interval '1 hour', 1
		FROM generate_series(1, 300) AS i`)
	require.NoError(t, err)

	require.NoError(t, migrations.Migrate(ctx, conn))
	rows, err := conn.Query(ctx, `SELECT c.shard, c.rows, (SELECT count(*) FROM runlimit_fixed_windows w
		WHERE (get_byte(w.config_fingerprint, 0) # get_byte(w.subject_key, 0)) = c.shard)
		FROM runlimit_capacity_shards c`)
	require.NoError(t, err)
	var total int64
	for rows.Next() {
		var shard int16
		var ledger, actual int64
		require.NoError(t, rows.Scan(&shard, &ledger, &actual))
		require.Equal(t, actual, ledger, "shard %d", shard)
		total += ledger
	}
	require.NoError(t, rows.Err())
	require.Equal(t, int64(300), total)
}
