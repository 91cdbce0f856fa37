package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
)

func TestMigrateAppliesTheSchemaOnceAndThenNothing(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	latest, steps, err := latestSchema("public")
	require.NoError(t, err)
	var names []string
	for _, st := range steps {
		names = append(names, st.Name)
	}

	r := execute(t, noEnv, "migrate", "--database-url", db.URL)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Equal(t, fmt.Sprintf("runlimit schema migrated from version 0 to %d (%s)\n", latest, strings.Join(names, ", ")), r.stdout)
	require.Empty(t, r.stderr)
	var shards int
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM runlimit_capacity_shards").Scan(&shards))
	require.Equal(t, 256, shards, "the ledger exists with its 256 shards")

	// Through the environment this time.
	r = execute(t, envOf(map[string]string{envDatabaseURL: db.URL}), "migrate")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Equal(t, fmt.Sprintf("runlimit schema already up to date at version %d\n", latest), r.stdout)
}

func TestMigrateRefusesAVendoredSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	_, steps, err := latestSchema("public")
	require.NoError(t, err)
	for _, st := range steps {
		_, err := db.Pool.Exec(context.Background(), st.Up)
		require.NoError(t, err, st.Name)
	}

	r := execute(t, noEnv, "migrate", "--database-url", db.URL)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "the schema was vendored")
	_, tracked, err := schemaVersion(context.Background(), db.Pool, "public")
	require.NoError(t, err)
	require.False(t, tracked, "no version table was created")
}

func TestMigrateRefusesANewerSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	_, err := db.Pool.Exec(context.Background(), "UPDATE runlimit_schema_version SET version = 99")
	require.NoError(t, err)

	r := execute(t, noEnv, "migrate", "--database-url", db.URL)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "at version 99, newer than this runlimit knows")
	version, _, err := schemaVersion(context.Background(), db.Pool, "public")
	require.NoError(t, err)
	require.EqualValues(t, 99, version)
}

func TestMigratePrintSQLNeedsNoDatabase(t *testing.T) {
	t.Parallel()
	steps, err := migrations.SQL("")
	require.NoError(t, err)

	r := execute(t, noEnv, "migrate", "--print-sql")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	at := 0
	for _, st := range steps {
		header := fmt.Sprintf("-- runlimit schema version %d: %s\n", st.Version, st.Name)
		i := strings.Index(r.stdout[at:], header+st.Up)
		require.GreaterOrEqual(t, i, 0, "step %s follows the one before, in full", st.Name)
		at += i + len(header) + len(st.Up)
	}
}

func TestMigratePrintSQLAppliesCleanly(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	r := execute(t, noEnv, "migrate", "--print-sql")
	require.Equal(t, 0, r.code)
	_, err := db.Pool.Exec(context.Background(), r.stdout)
	require.NoError(t, err, "the printed SQL is a script a host can run as is")

	r = execute(t, noEnv, "status", "--database-url", db.URL, "--json")
	require.Equal(t, 0, r.code, "the vendored schema works: %s", r.stderr)
	require.Contains(t, r.stdout, `"schema_version": null`)
}

// --schema takes every command to the same schema; a command pointed at
// another one says what to check.
func TestCommandsFollowTheSchemaFlag(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	latest, _, err := latestSchema("limits")
	require.NoError(t, err)

	r := execute(t, noEnv, "migrate", "--database-url", db.URL, "--schema", "limits")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stdout, fmt.Sprintf("from version 0 to %d", latest))
	var tables int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = 'limits'").Scan(&tables))
	require.Equal(t, 3, tables)

	r = execute(t, noEnv, "demo", "--database-url", db.URL, "--schema", "limits")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	r = execute(t, noEnv, "status", "--json", "--database-url", db.URL, "--schema", "limits")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	var report statusReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.NotNil(t, report.SchemaVersion)
	require.Equal(t, latest, *report.SchemaVersion)
	require.Positive(t, report.Rows, "the demo's counters are in the schema")

	for _, cmd := range []string{"status", "cleanup", "demo"} {
		r = execute(t, noEnv, cmd, "--database-url", db.URL)
		require.Equal(t, 1, r.code, cmd)
		require.Contains(t, r.stderr, `run "runlimit migrate" first, or check --schema`, cmd)
	}
	r = execute(t, noEnv, "status", "--database-url", db.URL, "--schema", "Not-A-Schema")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--schema")
}

// A schema a Rust Runlimit service migrated is adopted, and then served by
// every command; status says what to do before that.
func TestMigrateAdoptsARustSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	db.MigrateAsRust(t, "shared")
	latest, steps, err := latestSchema("shared")
	require.NoError(t, err)

	r := execute(t, noEnv, "status", "--database-url", db.URL, "--schema", "shared")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stdout, `a Rust Runlimit service migrated this schema: run "runlimit migrate" to adopt it`)

	r = execute(t, noEnv, "migrate", "--database-url", db.URL, "--schema", "shared")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	var added []string
	for _, st := range steps[migrations.RustSchemaVersion:] {
		added = append(added, st.Name)
	}
	require.Equal(t, fmt.Sprintf("adopting the schema a Rust Runlimit service migrated (its _sqlx_migrations records versions 20260723000000 to 20260726000000) as runlimit schema version %d\n"+
		"runlimit schema migrated from version %d to %d (%s)\n", migrations.RustSchemaVersion, migrations.RustSchemaVersion, latest, strings.Join(added, ", ")), r.stdout)

	r = execute(t, noEnv, "demo", "--database-url", db.URL, "--schema", "shared")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	r = execute(t, noEnv, "status", "--json", "--database-url", db.URL, "--schema", "shared")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	var status struct {
		SchemaVersion int32 `json:"schema_version"`
		Rows          int64 `json:"rows"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &status))
	require.Equal(t, latest, status.SchemaVersion)
	require.Positive(t, status.Rows, "the demo's counters are counted in the ledger")
	r = execute(t, noEnv, "migrate", "--database-url", db.URL, "--schema", "shared")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Equal(t, fmt.Sprintf("runlimit schema already up to date at version %d\n", latest), r.stdout)
}

// A command sharing the service's environment works on the service's
// schema: $RUNLIMIT_POSTGRES_SCHEMA, as app/wiring reads it, unless
// --schema says otherwise. It worked on public, and a migration job
// migrated a schema the service never used.
func TestSchemaFromTheServicesEnvironment(t *testing.T) {
	t.Parallel()
	limits, err := migrations.SQL("limits")
	require.NoError(t, err)
	public, err := migrations.SQL("")
	require.NoError(t, err)
	env := envOf(map[string]string{envSchema: "limits"})

	r := execute(t, env, "migrate", "--print-sql")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stdout, limits[0].Up)
	require.NotContains(t, r.stdout, public[0].Up)

	r = execute(t, env, "migrate", "--print-sql", "--schema", "public")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stdout, public[0].Up, "the flag wins")

	r = execute(t, envOf(map[string]string{envSchema: "pg_temp"}), "migrate", "--print-sql")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "$"+envSchema)
	for _, cmd := range []string{"status", "cleanup"} {
		r = execute(t, envOf(map[string]string{envSchema: "bad schema"}), cmd)
		require.Equal(t, 2, r.code, "%s: %s", cmd, r.stderr)
		require.Contains(t, r.stderr, "$"+envSchema, cmd)
	}
}
