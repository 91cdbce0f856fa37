package migrations_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// schema is what a test compares between databases: the runlimit tables,
// functions and triggers of one schema, and the ledger's row count.
type schema struct {
	Tables    []string
	Functions []string
	Triggers  []string
	Shards    int
}

func readSchema(t *testing.T, conn *pgx.Conn, name string) schema {
	t.Helper()
	ctx := context.Background()
	var s schema
	list := func(sql string) []string {
		rows, err := conn.Query(ctx, sql, name)
		require.NoError(t, err)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return names
	}
	s.Tables = list(`SELECT tablename::text FROM pg_catalog.pg_tables
		WHERE schemaname = $1 AND tablename LIKE 'runlimit%' ORDER BY 1`)
	s.Functions = list(`SELECT DISTINCT p.proname::text FROM pg_catalog.pg_proc AS p
		JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
		WHERE n.nspname = $1 AND p.proname LIKE 'runlimit%' ORDER BY 1`)
	s.Triggers = list(`SELECT t.tgname::text FROM pg_catalog.pg_trigger AS t
		JOIN pg_catalog.pg_class AS c ON c.oid = t.tgrelid
		JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
		WHERE NOT t.tgisinternal AND t.tgname LIKE 'runlimit%' AND n.nspname = $1 ORDER BY 1`)
	if slices.Contains(s.Tables, "runlimit_capacity_shards") {
		require.NoError(t, conn.QueryRow(ctx,
			"SELECT count(*) FROM "+pgx.Identifier{name, "runlimit_capacity_shards"}.Sanitize()).Scan(&s.Shards))
	}
	return s
}

// definitions lists every object of schema name with its full definition,
// as PostgreSQL prints it: columns, constraints, indexes, storage options,
// functions (body, search_path, security) and triggers, with their owners
// and privileges.
func definitions(t *testing.T, conn *pgx.Conn, name string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
		SELECT 'relation ' || c.relname || ' ' || c.relkind::text || ' ' || pg_catalog.pg_get_userbyid(c.relowner)
		       || ' ' || COALESCE(pg_catalog.array_to_string(c.reloptions, ','), '')
		       || ' ' || COALESCE(c.relacl::text, '')
		FROM pg_catalog.pg_class AS c WHERE c.relnamespace = $1::regnamespace
		UNION ALL
		SELECT 'column ' || c.relname || '.' || a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod)
		       || ' ' || a.attnotnull || ' ' || a.attnum
		FROM pg_catalog.pg_attribute AS a JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
		WHERE c.relnamespace = $1::regnamespace AND a.attnum > 0 AND NOT a.attisdropped AND c.relkind = 'r'
		UNION ALL
		SELECT 'constraint ' || r.conname || ' ' || pg_catalog.pg_get_constraintdef(r.oid)
		FROM pg_catalog.pg_constraint AS r WHERE r.connamespace = $1::regnamespace
		UNION ALL
		SELECT 'index ' || pg_catalog.pg_get_indexdef(i.indexrelid)
		FROM pg_catalog.pg_index AS i JOIN pg_catalog.pg_class AS c ON c.oid = i.indexrelid
		WHERE c.relnamespace = $1::regnamespace
		UNION ALL
		SELECT 'function ' || pg_catalog.pg_get_functiondef(p.oid) || ' owner '
		       || pg_catalog.pg_get_userbyid(p.proowner) || ' ' || COALESCE(p.proacl::text, '')
		FROM pg_catalog.pg_proc AS p WHERE p.pronamespace = $1::regnamespace
		UNION ALL
		SELECT 'trigger ' || pg_catalog.pg_get_triggerdef(t.oid) || ' ' || t.tgenabled::text
		FROM pg_catalog.pg_trigger AS t JOIN pg_catalog.pg_class AS c ON c.oid = t.tgrelid
		WHERE c.relnamespace = $1::regnamespace AND NOT t.tgisinternal
		ORDER BY 1`, pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.NotEmpty(t, defs)
	return defs
}

func connect(t *testing.T, db *pgtest.Database) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func config(t *testing.T, url string) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	return cfg
}

func version(t *testing.T, conn *pgx.Conn, table string) int32 {
	t.Helper()
	var v int32
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT version FROM "+table).Scan(&v))
	return v
}

func latest(t *testing.T) int32 {
	t.Helper()
	steps, err := migrations.SQL("")
	require.NoError(t, err)
	return steps[len(steps)-1].Version
}

var wantSchema = schema{
	Tables: []string{"runlimit_capacity_shards", "runlimit_fixed_windows", "runlimit_schema_version"},
	Functions: []string{
		"runlimit_capacity_count", "runlimit_capacity_count_truncated",
		"runlimit_forbid_key_update", "runlimit_lock_counter",
	},
	Triggers: []string{
		"runlimit_capacity_delete", "runlimit_capacity_insert",
		"runlimit_capacity_truncate", "runlimit_fixed_windows_immutable_storage_key",
	},
	Shards: 256,
}

var noSchema = schema{Tables: []string{}, Functions: []string{}, Triggers: []string{}}

func TestMigrateFresh(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	conn := connect(t, db)
	require.NoError(t, migrations.Migrate(context.Background(), config(t, db.URL), ""))
	require.Equal(t, wantSchema, readSchema(t, conn, "public"))
	require.Equal(t, latest(t), version(t, conn, "public."+migrations.VersionTable))
}

// Everything, the version table included, goes into the schema named, which
// Migrate creates; nothing lands in the connection's current schema.
func TestMigrateIntoItsOwnSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	conn := connect(t, db)
	ctx := context.Background()
	require.NoError(t, migrations.MigratePool(ctx, db.Pool, "Rate_Limits"))
	require.Equal(t, wantSchema, readSchema(t, conn, "Rate_Limits"))
	require.Equal(t, noSchema, readSchema(t, conn, "public"))
	require.Equal(t, latest(t), version(t, conn, `"Rate_Limits".`+migrations.VersionTable))

	// The triggers of that schema keep its own ledger.
	_, err := conn.Exec(ctx, `INSERT INTO "Rate_Limits".runlimit_fixed_windows VALUES
		('p', 's', decode(repeat('01', 32), 'hex'), decode(repeat('02', 32), 'hex'), now(), now() + interval '1 minute', 3)`)
	require.NoError(t, err)
	var ledger int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT row_count FROM "Rate_Limits".runlimit_capacity_shards WHERE capacity_shard = 3`).Scan(&ledger))
	require.Equal(t, int64(1), ledger)

	// Two schemas live side by side in one database.
	require.NoError(t, migrations.MigratePool(ctx, db.Pool, "other"))
	require.Equal(t, wantSchema, readSchema(t, conn, "other"))
	require.NoError(t, migrations.MigratePool(ctx, db.Pool, "Rate_Limits"))
	require.Equal(t, wantSchema, readSchema(t, conn, "Rate_Limits"))
}

func TestMigrateRejectsInvalidSchemaNames(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	for _, name := range []string{"pg_temp", "PG_catalog", "1st", "a-b", `a"b`, "a$$b", "a.b", "ä", strings.Repeat("a", 64)} {
		require.ErrorIs(t, migrations.CheckSchema(name), migrations.ErrInvalidSchema, name)
		require.ErrorIs(t, migrations.MigratePool(context.Background(), db.Pool, name), migrations.ErrInvalidSchema, name)
		_, err := migrations.SQL(name)
		require.ErrorIs(t, err, migrations.ErrInvalidSchema, name)
	}
	for _, name := range []string{"public", "runlimit", "Rate_Limits", "_x9", strings.Repeat("a", 63)} {
		require.NoError(t, migrations.CheckSchema(name), name)
	}
	var schemas int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname NOT LIKE 'pg\_%' AND nspname NOT IN ('public', 'information_schema')`).Scan(&schemas))
	require.Zero(t, schemas)
}

func TestMigrateTwiceIsANoOp(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	conn := connect(t, db)
	ctx := context.Background()
	require.NoError(t, migrations.Migrate(ctx, config(t, db.URL), ""))
	// A counter stored between the runs must survive the second one.
	_, err := conn.Exec(ctx, `INSERT INTO runlimit_fixed_windows VALUES
		('p', 's', decode(repeat('01', 32), 'hex'), decode(repeat('02', 32), 'hex'),
		 now(), now() + interval '1 minute', 3)`)
	require.NoError(t, err)

	require.NoError(t, migrations.MigratePool(ctx, db.Pool, migrations.DefaultSchema))
	require.Equal(t, wantSchema, readSchema(t, conn, "public"))
	require.Equal(t, latest(t), version(t, conn, migrations.VersionTable))
	var used, ledger int64
	require.NoError(t, conn.QueryRow(ctx, "SELECT used FROM runlimit_fixed_windows").Scan(&used))
	require.Equal(t, int64(3), used)
	require.NoError(t, conn.QueryRow(ctx, "SELECT row_count FROM runlimit_capacity_shards WHERE capacity_shard = 3").Scan(&ledger))
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
			db := pgtest.NewEmpty(t)
			conn := connect(t, db)
			ctx := context.Background()
			host := func() { require.NoError(t, hostMigrator(t, conn).Migrate(ctx)) }
			runlimit := func() { require.NoError(t, migrations.Migrate(ctx, config(t, db.URL), "")) }
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
			require.Equal(t, wantSchema, readSchema(t, conn, "public"))
			var email bool
			require.NoError(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM information_schema.columns
				WHERE table_name = 'accounts' AND column_name = 'email')`).Scan(&email))
			require.True(t, email)
		})
	}
}

func TestSQLIsOrderedAndVendorable(t *testing.T) {
	t.Parallel()
	steps, err := migrations.SQL("vendored")
	require.NoError(t, err)
	require.Len(t, steps, 7)
	for i, st := range steps {
		require.Equal(t, int32(i+1), st.Version)
		require.NotEmpty(t, st.Up)
		require.NotEmpty(t, st.Down)
		require.NotContains(t, st.Up, "---- create above / drop below ----")
		require.NotContains(t, st.Up+st.Down, "{{", "every template is rendered")
	}
	require.Equal(t, "001_fixed_windows.sql", steps[0].Name)
	require.Contains(t, steps[0].Up, `CREATE TABLE "vendored".runlimit_fixed_windows`)
	require.Contains(t, steps[1].Up, `CREATE TABLE "vendored".runlimit_capacity_shards`)
	require.Contains(t, steps[2].Up, `CREATE FUNCTION "vendored".runlimit_lock_counter`)
	require.Contains(t, steps[3].Up, `FROM "vendored".runlimit_fixed_windows AS w`)
	require.Contains(t, steps[4].Up, `ALTER TABLE "vendored".runlimit_capacity_shards RENAME COLUMN shard TO capacity_shard`)
	require.Contains(t, steps[5].Up, `CREATE OR REPLACE FUNCTION "vendored".runlimit_lock_counter`)
	defaults, err := migrations.SQL("")
	require.NoError(t, err)
	require.Contains(t, defaults[0].Up, `CREATE TABLE "public".runlimit_fixed_windows`)

	// A host that vendors the steps into its own history gets the schema
	// Migrate builds (without Runlimit's version table), in the schema it
	// named, whatever the connection's search_path.
	conn := connect(t, pgtest.NewEmpty(t))
	ctx := context.Background()
	_, err = conn.Exec(ctx, `CREATE SCHEMA vendored`)
	require.NoError(t, err)
	for _, st := range steps {
		_, err := conn.Exec(ctx, st.Up)
		require.NoError(t, err, st.Name)
	}
	want := wantSchema
	want.Tables = []string{"runlimit_capacity_shards", "runlimit_fixed_windows"}
	require.Equal(t, want, readSchema(t, conn, "vendored"))
	require.Equal(t, noSchema, readSchema(t, conn, "public"))

	// FS holds the same files tern loads.
	names, err := migrate.FindMigrations(migrations.FS())
	require.NoError(t, err)
	var stepNames []string
	for _, st := range steps {
		stepNames = append(stepNames, st.Name)
	}
	require.Equal(t, stepNames, names)
}

// Down steps lead back as far as Runlimit's names: the step after them
// drops only this library's own objects, and the renaming step refuses, with
// a clear error and nothing changed. Below it, the steps still revert.
func TestDownStepsRevertAndReapply(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	conn := connect(t, db)
	ctx := context.Background()
	m, err := migrate.NewMigrator(ctx, conn, migrations.VersionTable)
	require.NoError(t, err)
	m.Data["schema"] = `"public"`
	require.NoError(t, m.LoadMigrations(migrations.FS()))
	require.NoError(t, m.Migrate(ctx))
	fresh := definitions(t, conn, "public")
	_, err = conn.Exec(ctx, `INSERT INTO runlimit_fixed_windows VALUES
		('p', 's', decode(repeat('01', 32), 'hex'), decode(repeat('02', 32), 'hex'), now(), now() + interval '1 hour', 3)`)
	require.NoError(t, err)

	require.NoError(t, m.MigrateTo(ctx, migrations.RustSchemaVersion))
	requireRunlimitSchema(t, conn, "public")
	want := wantSchema
	want.Functions = []string{"runlimit_capacity_count", "runlimit_forbid_key_update"}
	want.Triggers = []string{"runlimit_capacity_delete", "runlimit_capacity_insert", "runlimit_fixed_windows_immutable_storage_key"}
	require.Equal(t, want, readSchema(t, conn, "public"))
	at5 := definitions(t, conn, "public")
	err = m.MigrateTo(ctx, migrations.RustSchemaVersion-1)
	requireSQLState(t, err, "0A000", "reverting Runlimit's names") // feature_not_supported
	require.Contains(t, err.Error(), "restore a backup")
	require.Equal(t, at5, definitions(t, conn, "public"), "nothing changed")
	require.Equal(t, int32(migrations.RustSchemaVersion), version(t, conn, migrations.VersionTable))
	var rows int64
	require.NoError(t, conn.QueryRow(ctx, "SELECT row_count FROM runlimit_capacity_shards WHERE capacity_shard = 3").Scan(&rows))
	require.Equal(t, int64(1), rows)

	require.NoError(t, m.Migrate(ctx))
	require.Equal(t, fresh, definitions(t, conn, "public"))

	// Below the renaming step, the steps revert: a database at version 4
	// goes back to nothing and up again.
	old := pgtest.NewEmpty(t)
	oldConn := connect(t, old)
	m, err = migrate.NewMigrator(ctx, oldConn, migrations.VersionTable)
	require.NoError(t, err)
	m.Data["schema"] = `"public"`
	require.NoError(t, m.LoadMigrations(migrations.FS()))
	require.NoError(t, m.MigrateTo(ctx, 4))
	require.NoError(t, m.MigrateTo(ctx, 0))
	require.Equal(t, schema{Tables: []string{"runlimit_schema_version"}, Functions: []string{}, Triggers: []string{}}, readSchema(t, oldConn, "public"))
	require.NoError(t, migrations.Migrate(ctx, config(t, old.URL), ""))
	require.Equal(t, fresh, definitions(t, oldConn, "public"))
}

// A database migrated by the previous release (its three steps, written
// with unqualified names and run through the connection's search_path)
// keeps its counters and ends up with exactly the objects a fresh database
// gets, pinned names and all.
func TestUpgradeFromVersion3MatchesFresh(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	freshDB := pgtest.NewEmpty(t)
	require.NoError(t, migrations.MigratePool(ctx, freshDB.Pool, ""))
	fresh := definitions(t, connect(t, freshDB), "public")

	db := pgtest.NewEmpty(t)
	conn := connect(t, db)
	old, err := migrate.NewMigrator(ctx, conn, migrations.VersionTable)
	require.NoError(t, err)
	require.NoError(t, old.LoadMigrations(os.DirFS("testdata/v3")))
	require.Len(t, old.Migrations, 3)
	require.NoError(t, old.Migrate(ctx))
	_, err = conn.Exec(ctx, `INSERT INTO runlimit_fixed_windows VALUES
		('p', 's', decode(repeat('01', 32), 'hex'), decode(repeat('02', 32), 'hex'), now(), now() + interval '1 hour', 3)`)
	require.NoError(t, err)
	v3 := definitions(t, conn, "public")
	require.NotEqual(t, fresh, v3, "the previous release's functions resolve names through the caller's search_path")

	require.NoError(t, migrations.MigratePool(ctx, db.Pool, ""))
	require.Equal(t, latest(t), version(t, conn, migrations.VersionTable))
	require.Equal(t, fresh, definitions(t, conn, "public"))
	var used, ledger int64
	require.NoError(t, conn.QueryRow(ctx, "SELECT used FROM runlimit_fixed_windows").Scan(&used))
	require.Equal(t, int64(3), used)
	require.NoError(t, conn.QueryRow(ctx, "SELECT row_count FROM runlimit_capacity_shards WHERE capacity_shard = 3").Scan(&ledger))
	require.Equal(t, int64(1), ledger)

	// A service of the previous release keeps admitting single checks
	// during the rollout: its six-argument call, unqualified, still finds
	// the function, which reads the new columns.
	var rows int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT (runlimit_lock_counter($1, decode(repeat('05', 32), 'hex'),
		decode(repeat('06', 32), 'hex'), 3::smallint, '1s', '1s')).shard_rows`, 7).Scan(&rows))
	require.Equal(t, int64(1), rows)
}

// A host that vendored the previous release's three steps adds the later
// ones and gets the fresh schema too.
func TestVendoredVersion3TakesTheNewStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	freshDB := pgtest.NewEmpty(t)
	require.NoError(t, migrations.MigratePool(ctx, freshDB.Pool, ""))
	fresh := definitions(t, connect(t, freshDB), "public")

	db := pgtest.NewEmpty(t)
	conn := connect(t, db)
	for _, name := range []string{"001_fixed_windows.sql", "002_capacity_ledger.sql", "003_lock_counter.sql"} {
		b, err := os.ReadFile("testdata/v3/" + name)
		require.NoError(t, err)
		up, _, _ := strings.Cut(string(b), "---- create above / drop below ----")
		_, err = conn.Exec(ctx, up)
		require.NoError(t, err, name)
	}
	steps, err := migrations.SQL("")
	require.NoError(t, err)
	for _, st := range steps[3:] {
		_, err = conn.Exec(ctx, st.Up)
		require.NoError(t, err, st.Name)
	}
	// The fresh database also has the version table.
	var withoutVersionTable []string
	for _, d := range fresh {
		if !strings.Contains(d, migrations.VersionTable) {
			withoutVersionTable = append(withoutVersionTable, d)
		}
	}
	require.Equal(t, withoutVersionTable, definitions(t, conn, "public"))
}

// A table from before the capacity ledger keeps its rows, and the ledger
// starts out counting them exactly.
func TestLedgerStepCountsExistingRows(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	conn := connect(t, db)
	ctx := context.Background()
	m, err := migrate.NewMigrator(ctx, conn, migrations.VersionTable)
	require.NoError(t, err)
	m.Data["schema"] = `"public"`
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

	require.NoError(t, migrations.Migrate(ctx, config(t, db.URL), ""))
	rows, err := conn.Query(ctx, `SELECT c.capacity_shard, c.row_count, (SELECT count(*) FROM runlimit_fixed_windows w
		WHERE (get_byte(w.config_fingerprint, 0) # get_byte(w.subject_key, 0)) = c.capacity_shard)
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

// Replicas starting together all migrate a schema none of them has created
// yet: the ones that lose the race to create it go on with the schema the
// winner created, and every one of them succeeds. Each round races four
// migrators on a new schema; a lost race used to fail with a unique
// violation on the catalog within a few rounds.
func TestMigrateConcurrentlyIntoANewSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	const rounds, replicas = 20, 4
	for round := range rounds {
		schema := fmt.Sprintf("race%d", round)
		errs := make(chan error, replicas)
		for range replicas {
			go func() { errs <- migrations.MigratePool(context.Background(), db.Pool, schema) }()
		}
		for range replicas {
			require.NoError(t, <-errs, "round %d", round)
		}
		require.Equal(t, wantSchema, readSchema(t, connect(t, db), schema))
	}
}
