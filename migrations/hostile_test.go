package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
)

// hostile is a role that may only create schemas in the test's database,
// as any role granted CREATE on it may.
func hostile(t *testing.T, db *pgtest.Database) *pgxpool.Pool {
	t.Helper()
	role := db.NewRole(t, "hostile")
	_, err := db.Pool.Exec(context.Background(),
		"GRANT CREATE ON DATABASE "+pgx.Identifier{db.Name}.Sanitize()+" TO "+pgx.Identifier{role.Name}.Sanitize())
	require.NoError(t, err)
	return role.NewPool(t, nil)
}

// A schema someone else created first is not one to install the limiter
// in: its owner could drop and replace anything Migrate puts there.
func TestMigrateRefusesAnUntrustedSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	ctx := context.Background()
	_, err := hostile(t, db).Exec(ctx, "CREATE SCHEMA runlimit")
	require.NoError(t, err)

	err = migrations.MigratePool(ctx, db.Pool, "runlimit")
	require.ErrorIs(t, err, migrations.ErrUntrustedSchema)
	require.Equal(t, noSchema, readSchema(t, connect(t, db), "runlimit"))
}

// A role that can create schemas plants one named after the migrating role,
// which the default search_path searches first, with functions that tern's
// unqualified calls would pick over pg_catalog's (double precision, the
// preferred numeric type, beats bigint for a parameter of unknown type),
// and that would run with the migrating role's rights. Migrate never calls
// them.
func TestMigrateIgnoresHostileSearchPath(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	ctx := context.Background()
	migrator := db.NewRole(t, "migrator")
	_, err := db.Pool.Exec(ctx, "GRANT CREATE ON DATABASE "+pgx.Identifier{db.Name}.Sanitize()+" TO "+pgx.Identifier{migrator.Name}.Sanitize())
	require.NoError(t, err)

	h := hostile(t, db)
	trap := pgx.Identifier{migrator.Name}.Sanitize()
	_, err = h.Exec(ctx, `CREATE SCHEMA `+trap+`;
		CREATE TABLE `+trap+`.calls (name text);
		GRANT USAGE ON SCHEMA `+trap+` TO PUBLIC;
		GRANT INSERT ON `+trap+`.calls TO PUBLIC;
		CREATE FUNCTION `+trap+`.pg_advisory_lock(double precision) RETURNS void LANGUAGE sql
			AS $$ INSERT INTO `+trap+`.calls VALUES ('lock') $$;
		CREATE FUNCTION `+trap+`.pg_advisory_unlock(double precision) RETURNS boolean LANGUAGE sql
			AS $$ INSERT INTO `+trap+`.calls VALUES ('unlock') RETURNING true $$;`)
	require.NoError(t, err)
	pool := migrator.NewPool(t, nil)
	// The trap works on a plain connection of the migrating role.
	_, err = pool.Exec(ctx, "SELECT pg_advisory_unlock($1)", 42)
	require.NoError(t, err)
	calls := func() int {
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM "+trap+".calls").Scan(&n))
		return n
	}
	require.Equal(t, 1, calls())

	require.NoError(t, migrations.MigratePool(ctx, pool, "limits"))
	require.NoError(t, migrations.MigratePool(ctx, pool, "limits"))
	require.Equal(t, 1, calls(), "tern's lock calls reached the planted functions")
	require.Equal(t, wantSchema, readSchema(t, connect(t, db), "limits"))
	require.Equal(t, noSchema, readSchema(t, connect(t, db), migrator.Name))
}

// Every function of the schema resolves names through a pinned
// search_path, whatever the session that calls it or fires its trigger
// has; the trigger functions run as their owner.
func TestEveryFunctionPinsItsSearchPath(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	ctx := context.Background()
	require.NoError(t, migrations.MigratePool(ctx, db.Pool, "pinned"))
	rows, err := db.Pool.Query(ctx, `SELECT p.oid::regprocedure::text, p.prorettype = 'pg_catalog.trigger'::pg_catalog.regtype,
			p.prosecdef, COALESCE(p.proconfig, '{}')
		FROM pg_catalog.pg_proc AS p WHERE p.pronamespace = 'pinned'::regnamespace`)
	require.NoError(t, err)
	type function struct {
		name     string
		trigger  bool
		definer  bool
		settings []string
	}
	functions, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (function, error) {
		var f function
		return f, r.Scan(&f.name, &f.trigger, &f.definer, &f.settings)
	})
	require.NoError(t, err)
	require.Len(t, functions, 4) // three trigger functions and the lock function
	for _, f := range functions {
		require.Equal(t, []string{"search_path=pg_catalog, pg_temp"}, f.settings, f.name)
		require.Equal(t, f.trigger, f.definer, "%s: trigger functions, and only they, are SECURITY DEFINER", f.name)
	}
}

// plantTraps plays a role that may create objects in schema (which it does
// not own): before anything is migrated there, it creates, under the names
// Migrate reads and writes, a version table whose trigger and a
// _sqlx_migrations view whose function record every call in
// schema.calls. Both run with the rights of whoever touches them.
func plantTraps(t *testing.T, db *pgtest.Database, schema string) (calls func() int) {
	t.Helper()
	ctx := context.Background()
	role := db.NewRole(t, "hostile")
	s := pgx.Identifier{schema}.Sanitize()
	_, err := db.Pool.Exec(ctx, "CREATE SCHEMA "+s+"; GRANT CREATE, USAGE ON SCHEMA "+s+" TO "+pgx.Identifier{role.Name}.Sanitize())
	require.NoError(t, err)
	_, err = role.NewPool(t, nil).Exec(ctx, `
		CREATE TABLE `+s+`.calls (name text);
		GRANT INSERT ON `+s+`.calls TO PUBLIC;
		CREATE FUNCTION `+s+`.trap() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO `+s+`.calls VALUES ('trigger'); RETURN NEW; END $$;
		CREATE TABLE `+s+`.runlimit_schema_version (version int4 NOT NULL);
		CREATE TRIGGER trap BEFORE INSERT OR UPDATE ON `+s+`.runlimit_schema_version
			FOR EACH ROW EXECUTE FUNCTION `+s+`.trap();
		GRANT ALL ON `+s+`.runlimit_schema_version TO PUBLIC;
		CREATE FUNCTION `+s+`.seen() RETURNS bigint LANGUAGE sql VOLATILE AS $$
			INSERT INTO `+s+`.calls VALUES ('view') RETURNING 20260723000000::bigint $$;
		CREATE VIEW `+s+`._sqlx_migrations AS SELECT `+s+`.seen() AS version, true AS success;
		GRANT SELECT ON `+s+`._sqlx_migrations TO PUBLIC;`)
	require.NoError(t, err)
	return func() int {
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM "+s+".calls").Scan(&n))
		return n
	}
}

// A role that may create objects in a trusted schema, but owns nothing
// Runlimit created, plants look-alikes of the tables Migrate reads and
// writes before it runs. Migrate refuses the schema without touching them:
// their trigger and view would run the role's code with the migrating
// role's rights, and a version table the role owns could claim any
// version.
func TestMigrateRefusesObjectsAnUntrustedRoleOwns(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	ctx := context.Background()
	calls := plantTraps(t, db, "shared")

	err := migrations.MigratePool(ctx, db.Pool, "shared")
	require.ErrorIs(t, err, migrations.ErrUntrustedSchema)
	require.Contains(t, err.Error(), "_sqlx_migrations\" in schema \"shared\" belongs to another role")
	require.Zero(t, calls(), "Migrate ran the planted code")
	var tables int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_class
		WHERE relnamespace = 'shared'::regnamespace AND relname LIKE 'runlimit_fixed%'`).Scan(&tables))
	require.Zero(t, tables)
}

// A function the role plants under the lock function's name and signature
// would survive CREATE OR REPLACE run by a superuser, still owned by the
// role, which could then rewrite the admission protocol at will.
func TestMigrateRefusesAFunctionAnUntrustedRoleOwns(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	ctx := context.Background()
	role := db.NewRole(t, "hostile")
	_, err := db.Pool.Exec(ctx, "CREATE SCHEMA shared; GRANT CREATE, USAGE ON SCHEMA shared TO "+pgx.Identifier{role.Name}.Sanitize())
	require.NoError(t, err)
	db.MigrateAsRust(t, "shared")
	_, err = role.NewPool(t, nil).Exec(ctx, `CREATE FUNCTION shared.runlimit_lock_counter(
			lock_id bigint, fingerprint bytea, subject bytea, shard smallint, wait_timeout text, idle_timeout text,
			OUT used bigint, OUT started_at timestamptz, OUT expires_at timestamptz,
			OUT shard_rows bigint, OUT sampled_at timestamptz)
		LANGUAGE sql AS $$ SELECT NULL::bigint, NULL::timestamptz, NULL::timestamptz, 0::bigint, pg_catalog.clock_timestamp() $$`)
	require.NoError(t, err)

	err = migrations.MigratePool(ctx, db.Pool, "shared")
	require.ErrorIs(t, err, migrations.ErrUntrustedSchema)
	require.Contains(t, err.Error(), "runlimit_lock_counter")
}

// A service's role uses a schema another role migrated and owns, holding
// only the privileges it needs. CheckOwners accepts that schema, which
// CheckTrusted (the migrating role's check) refuses to a role that cannot
// vouch for its owner, and refuses it once a third role holding CREATE on
// it plants an object under one of Runlimit's names, naming the object:
// for the service's role and for the migrating role alike.
func TestCheckOwnersTrustsTheSchemasOwnerOnly(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	ctx := context.Background()
	migrator := db.NewRole(t, "migrator")
	_, err := db.Pool.Exec(ctx, "GRANT CREATE ON DATABASE "+pgx.Identifier{db.Name}.Sanitize()+" TO "+pgx.Identifier{migrator.Name}.Sanitize())
	require.NoError(t, err)
	migratorPool := migrator.NewPool(t, nil)
	require.NoError(t, migrations.MigratePool(ctx, migratorPool, "Limits"))
	svc := db.NewRole(t, "svc")
	_, err = migratorPool.Exec(ctx, `GRANT USAGE ON SCHEMA "Limits" TO `+pgx.Identifier{svc.Name}.Sanitize())
	require.NoError(t, err)
	svcPool := svc.NewPool(t, nil)

	require.NoError(t, migrations.CheckOwners(ctx, svcPool, "Limits"))
	require.NoError(t, migrations.CheckOwners(ctx, migratorPool, "Limits"))
	require.NoError(t, migrations.CheckOwners(ctx, svcPool, "missing"))
	require.ErrorIs(t, migrations.CheckTrusted(ctx, svcPool, "Limits"), migrations.ErrUntrustedSchema)

	planter := db.NewRole(t, "planter")
	_, err = migratorPool.Exec(ctx, `GRANT CREATE ON SCHEMA "Limits" TO `+pgx.Identifier{planter.Name}.Sanitize())
	require.NoError(t, err)
	_, err = planter.NewPool(t, nil).Exec(ctx, `CREATE FUNCTION "Limits".runlimit_planted() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$`)
	require.NoError(t, err)
	for _, pool := range []*pgxpool.Pool{svcPool, migratorPool} {
		err := migrations.CheckOwners(ctx, pool, "Limits")
		require.ErrorIs(t, err, migrations.ErrUntrustedSchema)
		require.Contains(t, err.Error(), `"runlimit_planted" in schema "Limits"`)
		require.NotContains(t, err.Error(), planter.Name)
	}
	require.ErrorIs(t, migrations.CheckOwners(ctx, svcPool, "bad schema"), migrations.ErrInvalidSchema)
	require.ErrorIs(t, migrations.CheckOwners(ctx, nil, "Limits"), migrations.ErrNilArgument)
}
