package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
)

// hostileBeside returns a ready store on a fresh database, through a
// service role that owns nothing, and a pool of a hostile role that the
// database's owner granted grants (SQL, with the role's quoted name in
// place of %[1]s).
func hostileBeside(t *testing.T, grants string) (*pgtest.Database, *postgres.Store, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	svc := db.NewServiceRole(t, "public")
	store, err := postgres.New(svc.NewPool(t, nil), postgres.Config{})
	require.NoError(t, err)
	require.NoError(t, store.Ready(ctx))
	hostile := db.NewRole(t, "hostile")
	_, err = db.Pool.Exec(ctx, fmt.Sprintf(grants, pgx.Identifier{hostile.Name}.Sanitize()))
	require.NoError(t, err)
	return db, store, hostile.NewPool(t, nil)
}

// A role that holds TRIGGER on the counters' table (GRANT ALL gives it)
// but owns nothing of Runlimit's attaches a trigger of its own function:
// every admission and cleanup of the service would then run that role's
// code with the service's rights, which reach the host's own tables on a
// shared pool. Ready refuses the schema, naming the trigger, and runs none
// of it.
func TestReadyRefusesATriggerAnotherRoleAttached(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, store, hostile := hostileBeside(t, `CREATE SCHEMA hostile AUTHORIZATION %[1]s;
		GRANT TRIGGER ON public.runlimit_fixed_windows TO %[1]s`)
	_, err := hostile.Exec(ctx, `
		CREATE TABLE hostile.calls (n int);
		GRANT INSERT ON hostile.calls TO PUBLIC;
		CREATE FUNCTION hostile.spy() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO hostile.calls VALUES (1); RETURN NULL; END $$;
		CREATE TRIGGER zz_spy AFTER INSERT OR UPDATE OR DELETE ON public.runlimit_fixed_windows
			FOR EACH STATEMENT EXECUTE FUNCTION hostile.spy();
		GRANT USAGE ON SCHEMA hostile TO PUBLIC`)
	require.NoError(t, err)

	err = store.Ready(ctx)
	require.ErrorIs(t, err, postgres.ErrUntrustedSchema)
	require.Contains(t, err.Error(), `trigger "zz_spy" on "runlimit_fixed_windows"`)
	var calls int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM hostile.calls").Scan(&calls))
	require.Zero(t, calls, "Ready ran the planted trigger")
}

// A role that holds REFERENCES on the counters' table adds a foreign key
// from a table of its own to a counter. Deleting that counter then fails,
// and with it every cleanup pass that reaches it, whatever else it would
// delete: expired rows keep their slots until every shard is full and
// every new subject is denied. Ready refuses the schema.
func TestReadyRefusesAForeignKeyIntoTheCounters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, store, hostile := hostileBeside(t, `CREATE SCHEMA hostile AUTHORIZATION %[1]s;
		GRANT REFERENCES ON public.runlimit_fixed_windows TO %[1]s`)
	_, err := hostile.Exec(ctx, `
		CREATE TABLE hostile.pins (f bytea, s bytea,
			CONSTRAINT zz_pin FOREIGN KEY (f, s) REFERENCES public.runlimit_fixed_windows (config_fingerprint, subject_key))`)
	require.NoError(t, err)

	err = store.Ready(ctx)
	require.ErrorIs(t, err, postgres.ErrUntrustedSchema)
	require.Contains(t, err.Error(), `foreign key "zz_pin" on "runlimit_fixed_windows"`)
}

// A role that holds TRIGGER on the counters' table, and EXECUTE on the
// schema's functions (PUBLIC held it before migration step 7; GRANT
// EXECUTE ON ALL FUNCTIONS IN SCHEMA gives it back), attaches Runlimit's
// own ledger functions (SECURITY DEFINER, owned by a trusted role) to
// events Runlimit's triggers do not use: every admission's UPDATE then
// counts its counter out of the ledger,
// or every insert sets every shard's count to zero, and the per-shard
// bound (the database's hard maximum included) no longer holds. Ready
// refuses each, naming the trigger; Runlimit's own triggers, on a Go and
// on an adopted Rust schema, pass (every other Ready test).
func TestReadyRefusesRunlimitsTriggerFunctionsOnOtherEvents(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, trigger string }{
		{"a second delete count", `CREATE TRIGGER zz_bad AFTER DELETE ON public.runlimit_fixed_windows
			REFERENCING OLD TABLE AS runlimit_rows FOR EACH STATEMENT EXECUTE FUNCTION public.runlimit_capacity_count()`},
		{"a second insert count per row", `CREATE TRIGGER zz_bad AFTER INSERT ON public.runlimit_fixed_windows
			REFERENCING NEW TABLE AS runlimit_rows FOR EACH ROW EXECUTE FUNCTION public.runlimit_capacity_count()`},
		{"a count on update", `CREATE TRIGGER zz_bad AFTER UPDATE ON public.runlimit_fixed_windows
			REFERENCING OLD TABLE AS runlimit_rows FOR EACH STATEMENT EXECUTE FUNCTION public.runlimit_capacity_count()`},
		{"the truncate reset on insert", `CREATE TRIGGER zz_bad AFTER INSERT ON public.runlimit_fixed_windows
			FOR EACH STATEMENT EXECUTE FUNCTION public.runlimit_capacity_count_truncated()`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			_, store, hostile := hostileBeside(t, `GRANT TRIGGER ON public.runlimit_fixed_windows TO %[1]s;
				GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO %[1]s`)
			_, err := hostile.Exec(ctx, tc.trigger)
			require.NoError(t, err)

			err = store.Ready(ctx)
			require.ErrorIs(t, err, postgres.ErrUntrustedSchema)
			require.Contains(t, err.Error(), `trigger "zz_bad" on "runlimit_fixed_windows"`)
		})
	}
}

// The triggers of a schema a Rust service created, which Migrate adopted,
// are Runlimit's own: Ready passes. A second trigger of its ledger
// function on one of its events is refused there too.
func TestReadyAcceptsAnAdoptedRustSchemasTriggers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	db.MigrateAsRust(t, "public")
	require.NoError(t, migrations.MigratePool(ctx, db.Pool, "public"))
	store, err := postgres.New(db.Pool, postgres.Config{})
	require.NoError(t, err)
	require.NoError(t, store.Ready(ctx))

	_, err = db.Pool.Exec(ctx, `CREATE TRIGGER zz_bad AFTER INSERT ON public.runlimit_fixed_windows
		REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.runlimit_ledger_adjust()`)
	require.NoError(t, err)
	require.ErrorIs(t, store.Ready(ctx), postgres.ErrUntrustedSchema)
}

// A schema vendored into a host's migrations records no version, so Ready
// judges it by its objects: one whose ledger functions PUBLIC may still
// execute (the host did not vendor step 7, or granted the privilege back)
// lets any role set the ledger's counts, and Ready says to apply step 7.
func TestReadyWantsStep7OnAVendoredSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	svc := db.NewServiceRole(t, "public")
	_, err := db.Pool.Exec(ctx, "DROP TABLE public.runlimit_schema_version")
	require.NoError(t, err)
	store, err := postgres.New(svc.NewPool(t, nil), postgres.Config{})
	require.NoError(t, err)
	require.NoError(t, store.Ready(ctx), "a vendored schema with step 7 is ready")

	_, err = db.Pool.Exec(ctx, "GRANT EXECUTE ON FUNCTION public.runlimit_capacity_count_truncated() TO PUBLIC")
	require.NoError(t, err)
	err = store.Ready(ctx)
	require.ErrorIs(t, err, postgres.ErrSchemaVersion)
	require.Contains(t, err.Error(), `PUBLIC may execute trigger function "runlimit_capacity_count_truncated" in schema "public"`)
	require.Contains(t, err.Error(), "step 7")

	_, err = db.Pool.Exec(ctx, "REVOKE EXECUTE ON FUNCTION public.runlimit_capacity_count_truncated() FROM PUBLIC")
	require.NoError(t, err)
	require.NoError(t, store.Ready(ctx))
}
