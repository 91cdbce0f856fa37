package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
)

// status and cleanup, run as the service's role, read and clean the real
// schema even when a role that may only create schemas has planted
// look-alikes of every table first on that role's search_path (their
// version is 999, their ledger says every shard holds 7 rows, and their
// table holds one expired counter).
func TestStatusAndCleanupIgnoreAShadowSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	svc := db.NewServiceRole(t, "public")
	db.PlantShadowSchema(t, svc.Name)
	addCounters(t, db.Pool, "shadowed", 3)
	latest, _, err := latestSchema("public")
	require.NoError(t, err)

	r := execute(t, noEnv, "status", "--json", "--database-url", svc.URL)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	var report statusReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.NotNil(t, report.SchemaVersion)
	require.Equal(t, latest, *report.SchemaVersion)
	require.EqualValues(t, 3, report.Rows)

	expireAll(t, db.Pool)
	r = execute(t, noEnv, "cleanup", "--database-url", svc.URL)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stdout, "removed 3 expired rows")
	var real, shadow int
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM public.runlimit_fixed_windows").Scan(&real))
	require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM "`+svc.Name+`".runlimit_fixed_windows`).Scan(&shadow))
	require.Zero(t, real)
	require.Equal(t, 1, shadow)
	require.Zero(t, db.ShadowCaptures(t, svc.Name))
}

// runlimit migrate, run by an operator, reads nothing from a schema another
// role created before refusing it: a view there named like the version
// table would run that role's code with the operator's rights.
func TestMigrateReadsNothingFromAnUntrustedSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	ctx := context.Background()
	role := db.NewRole(t, "hostile")
	_, err := db.Pool.Exec(ctx, "GRANT CREATE ON DATABASE "+pgx.Identifier{db.Name}.Sanitize()+" TO "+pgx.Identifier{role.Name}.Sanitize())
	require.NoError(t, err)
	_, err = role.NewPool(t, nil).Exec(ctx, `
		CREATE SCHEMA evil;
		CREATE TABLE evil.calls (name text);
		GRANT USAGE ON SCHEMA evil TO PUBLIC;
		GRANT INSERT ON evil.calls TO PUBLIC;
		CREATE FUNCTION evil.seen() RETURNS int4 LANGUAGE sql VOLATILE AS $$
			INSERT INTO evil.calls VALUES ('view') RETURNING 1 $$;
		CREATE VIEW evil.runlimit_schema_version AS SELECT evil.seen() AS version;
		CREATE VIEW evil._sqlx_migrations AS SELECT evil.seen()::bigint AS version, true AS success;
		GRANT SELECT ON ALL TABLES IN SCHEMA evil TO PUBLIC;`)
	require.NoError(t, err)

	r := execute(t, noEnv, "migrate", "--schema", "evil", "--database-url", db.URL)
	require.Equal(t, 1, r.code, "stdout: %s", r.stdout)
	require.Contains(t, r.stderr, "untrusted")
	var calls int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM evil.calls").Scan(&calls))
	require.Zero(t, calls, "migrate ran the planted code")
}

// status and cleanup, run as the service's role on a schema vendored into
// the host's migrations (it has no version table), refuse the schema once
// a role holding CREATE on it has planted views named like the version
// table and sqlx's, whose code would run with the caller's rights and make
// status report whatever version the planter likes. They say which object
// and which schema, exit 1, and run none of the planted code.
func TestStatusAndCleanupRefuseAPlantedObject(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	svc := db.NewServiceRole(t, "public")
	_, err := db.Pool.Exec(context.Background(), "DROP TABLE public.runlimit_schema_version")
	require.NoError(t, err)
	addCounters(t, db.Pool, "planted", 2)
	expireAll(t, db.Pool)
	calls := db.PlantVersionView(t, "public")

	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"cleanup"}, {"cleanup", "--every", "1h"}} {
		r := execute(t, noEnv, append(args, "--database-url", svc.URL)...)
		require.Equal(t, 1, r.code, "%v: stdout: %s", args, r.stdout)
		require.Contains(t, r.stderr, "untrusted role", args)
		require.Contains(t, r.stderr, `"_sqlx_migrations" in schema "public"`, args)
		require.Empty(t, r.stdout, args)
	}
	require.Zero(t, calls(), "the planted code ran")
	var rows int
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM public.runlimit_fixed_windows").Scan(&rows))
	require.Equal(t, 2, rows, "cleanup deleted rows from a schema it refused")
}

// A search_path set for the service's role that searches a schema before
// pg_catalog, where an always-true = on bytea waits, neither subverts
// status and cleanup nor stops them: the commands pin their sessions'
// search_path (a startup parameter, which overrides the role's setting),
// so the store, which refuses a session searching another schema first,
// serves them, and cleanup removes exactly the expired counters.
func TestStatusAndCleanupPinTheirSearchPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	addCounters(t, db.Pool, "pinned", 3)
	expireAll(t, db.Pool)
	svc := db.NewServiceRole(t, "public")
	db.PlantLookalikeEquals(t, svc)
	var same bool
	require.NoError(t, svc.NewPool(t, nil).QueryRow(ctx, `SELECT '\x00'::bytea = '\x01'::bytea`).Scan(&same))
	require.True(t, same, "the trap is set for the role's own sessions")

	r := execute(t, noEnv, "status", "--json", "--database-url", svc.URL)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	var report statusReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.EqualValues(t, 3, report.Rows)

	r = execute(t, noEnv, "cleanup", "--database-url", svc.URL)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Zero(t, rowCount(t, db.Pool))
}
