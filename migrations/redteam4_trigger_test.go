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
