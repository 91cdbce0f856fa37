package main

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
)

// A role holding TRIGGER on the counters' table attaches a trigger of its
// own function, which would run with the service role's rights on every
// row cleanup deletes. status and cleanup refuse the schema, naming the
// trigger, and delete nothing, so the trigger never runs.
func TestStatusAndCleanupRefuseAPlantedTrigger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	svc := db.NewServiceRole(t, "public")
	addCounters(t, db.Pool, "trigger", 2)
	expireAll(t, db.Pool)
	hostile := db.NewRole(t, "hostile")
	h := pgx.Identifier{hostile.Name}.Sanitize()
	_, err := db.Pool.Exec(ctx, `CREATE SCHEMA hostile AUTHORIZATION `+h+`;
		GRANT TRIGGER ON public.runlimit_fixed_windows TO `+h)
	require.NoError(t, err)
	_, err = hostile.NewPool(t, nil).Exec(ctx, `
		CREATE TABLE hostile.calls (n int);
		GRANT INSERT ON hostile.calls TO PUBLIC;
		GRANT USAGE ON SCHEMA hostile TO PUBLIC;
		CREATE FUNCTION hostile.spy() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO hostile.calls VALUES (1); RETURN NULL; END $$;
		CREATE TRIGGER zz_spy AFTER DELETE ON public.runlimit_fixed_windows
			FOR EACH STATEMENT EXECUTE FUNCTION hostile.spy()`)
	require.NoError(t, err)

	for _, args := range [][]string{{"status"}, {"cleanup"}} {
		r := execute(t, noEnv, append(args, "--database-url", svc.URL)...)
		require.Equal(t, 1, r.code, "%v: stdout: %s", args, r.stdout)
		require.Contains(t, r.stderr, `trigger "zz_spy" on "runlimit_fixed_windows" in schema "public"`, args)
		require.Empty(t, r.stdout, args)
	}
	var calls, rows int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM hostile.calls").Scan(&calls))
	require.Zero(t, calls, "the planted trigger ran")
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM public.runlimit_fixed_windows").Scan(&rows))
	require.Equal(t, 2, rows, "cleanup deleted rows from a schema it refused")
}
