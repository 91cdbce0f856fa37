package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
)

// RustMigrated reads sqlx's table on a querier of the caller's, whose
// search_path may reach a schema before pg_catalog (CheckTrusted and
// CheckOwners already name every operator in full for that reason). Here
// that schema holds an = on bigint that is always false, a count() that
// always answers 0 and a bool "success" cast, each leaving a witness: a
// Rust schema must still be recognised, through the built-ins alone.
func TestRustMigratedCallsOnlyBuiltIns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	db.MigrateAsRust(t, "public")
	_, err := db.Pool.Exec(ctx, `
		CREATE SCHEMA lookalike;
		CREATE TABLE lookalike.witness (what text);
		CREATE FUNCTION lookalike.never(a bigint, b bigint) RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO lookalike.witness VALUES ('=');
			RETURN false;
		END $$;
		CREATE OPERATOR lookalike.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = lookalike.never);
		CREATE FUNCTION lookalike.zero(state bigint) RETURNS bigint LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO lookalike.witness VALUES ('count');
			RETURN 0;
		END $$;
		CREATE AGGREGATE lookalike.count(*) (SFUNC = lookalike.zero, STYPE = bigint, INITCOND = '0');
		GRANT USAGE ON SCHEMA lookalike TO PUBLIC;
		GRANT ALL ON lookalike.witness TO PUBLIC`)
	require.NoError(t, err)
	pool := db.NewPool(t, func(c *pgxpool.Config) {
		c.ConnConfig.RuntimeParams["search_path"] = "lookalike, pg_catalog, public"
	})

	rust, err := migrations.RustMigrated(ctx, pool, "public")
	require.NoError(t, err)
	require.True(t, rust)
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT pg_catalog.count(*) FROM lookalike.witness`).Scan(&n))
	require.Zero(t, n, "a look-alike of the search_path ran")
}
