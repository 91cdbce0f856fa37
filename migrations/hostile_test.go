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
