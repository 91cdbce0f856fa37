package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
)

// A role holding TRIGGER on the version table, and owning nothing of
// Runlimit's, attaches a trigger of its own function. The next Migrate
// with a step to apply writes the version table, and the function would
// run with the migrating role's rights, which are a superuser's in many
// deployments. Migrate refuses the schema first, naming the trigger, and
// neither the step nor the function runs.
func TestMigrateRefusesATriggerAnotherRoleAttached(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn := connect(t, db)
	m, err := migrate.NewMigrator(ctx, conn, migrations.VersionTable)
	require.NoError(t, err)
	m.Data["schema"] = `"public"`
	require.NoError(t, m.LoadMigrations(migrations.FS()))
	require.NoError(t, m.MigrateTo(ctx, migrations.RustSchemaVersion))

	hostile := db.NewRole(t, "hostile")
	h := pgx.Identifier{hostile.Name}.Sanitize()
	_, err = db.Pool.Exec(ctx, `CREATE SCHEMA hostile AUTHORIZATION `+h+`;
		GRANT TRIGGER ON public.runlimit_schema_version TO `+h)
	require.NoError(t, err)
	_, err = hostile.NewPool(t, nil).Exec(ctx, `
		CREATE TABLE hostile.calls (who name);
		GRANT INSERT ON hostile.calls TO PUBLIC;
		GRANT USAGE ON SCHEMA hostile TO PUBLIC;
		CREATE FUNCTION hostile.spy() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO hostile.calls VALUES (current_user); RETURN NULL; END $$;
		CREATE TRIGGER zz_spy AFTER UPDATE OR INSERT ON public.runlimit_schema_version
			FOR EACH STATEMENT EXECUTE FUNCTION hostile.spy()`)
	require.NoError(t, err)

	err = migrations.Migrate(ctx, config(t, db.URL), "")
	require.ErrorIs(t, err, migrations.ErrUntrustedSchema)
	require.Contains(t, err.Error(), `trigger "zz_spy" on "runlimit_schema_version" in schema "public"`)
	var calls int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM hostile.calls").Scan(&calls))
	require.Zero(t, calls, "Migrate ran the planted trigger")
	require.Equal(t, int32(migrations.RustSchemaVersion), version(t, conn, migrations.VersionTable), "a step ran")
}

// The ledger's trigger functions run as their owner. A role that holds
// nothing on Runlimit's tables, only what PUBLIC has (CONNECT, TEMP, and
// USAGE on public), attaches them to a temporary table of its own: one
// insert there would set every shard's count to zero, or count 65,536
// rows into a shard, and the bound per shard would be gone or every new
// key in it denied. Migrate takes EXECUTE on them from PUBLIC, so
// creating such a trigger fails; Runlimit's own triggers still fire for a
// service role that holds no EXECUTE on them. Checked on a Go schema and
// on an adopted Rust one.
func TestOnlyRunlimitsTriggersCanCallTheLedgerFunctions(t *testing.T) {
	t.Parallel()
	for _, rust := range []bool{false, true} {
		name := "go"
		if rust {
			name = "rust"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := pgtest.NewEmpty(t)
			if rust {
				db.MigrateAsRust(t, "public")
			}
			require.NoError(t, migrations.Migrate(ctx, config(t, db.URL), ""))
			var functions []string
			rows, err := db.Pool.Query(ctx, `SELECT proname FROM pg_proc
				WHERE pronamespace = 'public'::regnamespace AND prorettype = 'trigger'::regtype ORDER BY 1`)
			require.NoError(t, err)
			functions, err = pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			require.NotEmpty(t, functions)

			nobody := db.NewRole(t, "nobody").NewPool(t, nil)
			for _, f := range functions {
				_, err := nobody.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS mine (capacity_shard smallint);
					CREATE TRIGGER zz AFTER INSERT ON pg_temp.mine REFERENCING NEW TABLE AS runlimit_rows
						FOR EACH STATEMENT EXECUTE FUNCTION public.`+pgx.Identifier{f}.Sanitize()+`()`)
				requireSQLState(t, err, "42501", f) // insufficient_privilege
			}

			svc := db.NewServiceRole(t, "public").NewPool(t, nil)
			_, err = svc.Exec(ctx, `INSERT INTO public.runlimit_fixed_windows
				(policy_id, scope_id, config_fingerprint, subject_key, window_started_at, window_expires_at, used)
				VALUES ('p', 's', decode(repeat('01', 32), 'hex'), decode(repeat('02', 32), 'hex'), now(), now() + interval '1 hour', 1)`)
			require.NoError(t, err)
			var count int64
			require.NoError(t, db.Pool.QueryRow(ctx, "SELECT row_count FROM public.runlimit_capacity_shards WHERE capacity_shard = 3").Scan(&count))
			require.Equal(t, int64(1), count, "the ledger's trigger fired for the service role")
			_, err = svc.Exec(ctx, `UPDATE public.runlimit_fixed_windows SET subject_key = decode(repeat('05', 32), 'hex')`)
			requireSQLState(t, err, "23514", "the key guard fired for the service role")
			_, err = svc.Exec(ctx, `DELETE FROM public.runlimit_fixed_windows`)
			require.NoError(t, err)
			require.NoError(t, db.Pool.QueryRow(ctx, "SELECT row_count FROM public.runlimit_capacity_shards WHERE capacity_shard = 3").Scan(&count))
			require.Zero(t, count)
		})
	}
}
