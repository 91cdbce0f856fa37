package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// The warm-up of a new connection reads the session's settings and, in the
// same pipelined round trip, prepares the store's statements and runs its
// reads once. Under a search_path that searches another schema before
// pg_catalog, those reads would call that schema's = on bytea once per
// stored counter, handing it every counter's key, as the service's role,
// before the store looked at the settings it had read. The store must
// refuse such a session before it runs, or prepares, anything there: the
// look-alike never runs, on either entry point and either protocol.
func TestWarmUpRunsNothingUnderAnUnsafeSearchPath(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		ctx := context.Background()
		f := setup(t, e.cfg(postgres.Config{}))
		p := policy(t, "warm.lookalike", 5, time.Hour)
		bystanders := []domain.Check{f.check(p, "a"), f.check(p, "b"), f.check(p, "c")}
		requireAllowed(t, admit(t, f.store, bystanders...))

		schema := "lookalike_" + randomName(t)
		plantCountingEquals(t, f.db, schema)
		store, pool := f.serviceStore(t, e.cfg(postgres.Config{}), func(r *pgtest.Role) {
			f.db.SetRoleSetting(t, r, "search_path", schema, "pg_catalog", "public")
		}, func(c *pgxpool.Config) { c.MaxConns = 1 })

		// The trap is set: the session's = on bytea is the look-alike.
		conn, err := pool.Acquire(ctx)
		require.NoError(t, err)
		var same bool
		require.NoError(t, conn.QueryRow(ctx, `SELECT '\x00'::bytea = '\x00'::bytea`).Scan(&same))
		require.True(t, same)
		conn.Release()
		calls := laterCalls(t, f.db, schema)
		require.Equal(t, int64(1), calls)

		checks := e.checks(f, p, "subject")
		for range 2 {
			_, err := e.admit(ctx, store, checks)
			requireAdmissionError(t, err, postgres.OpAcquire, false)
			requireUnsafeSetting(t, err, "search_path")
		}
		require.Equal(t, calls, laterCalls(t, f.db, schema), "the look-alike = ran as the service's role")
		f.requireAbsent(t, checks)
		f.requireUsed(t, bystanders, 1)

		// Nothing was prepared on the refused connection.
		conn, err = pool.Acquire(ctx)
		require.NoError(t, err)
		defer conn.Release()
		var prepared int
		require.NoError(t, conn.QueryRow(ctx, `SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_statements
			WHERE pg_catalog.starts_with(name, 'runlimit_')`).Scan(&prepared))
		require.Zero(t, prepared)
	})
}

// plantCountingEquals creates schema, usable by everyone, with an = on
// bytea that answers as the built-in does and counts its calls in a
// sequence (which no rollback takes back), read by laterCalls.
func plantCountingEquals(t *testing.T, db *pgtest.Database, schema string) {
	t.Helper()
	s := pgx.Identifier{schema}.Sanitize()
	_, err := db.Pool.Exec(context.Background(), `
		CREATE SCHEMA `+s+`;
		CREATE SEQUENCE `+s+`.calls;
		CREATE FUNCTION `+s+`.eq(a bytea, b bytea) RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN
			PERFORM pg_catalog.nextval('`+s+`.calls'::pg_catalog.regclass);
			RETURN a OPERATOR(pg_catalog.=) b;
		END $$;
		CREATE OPERATOR `+s+`.= (LEFTARG = bytea, RIGHTARG = bytea, FUNCTION = `+s+`.eq);
		GRANT USAGE ON SCHEMA `+s+` TO PUBLIC;
		GRANT ALL ON SEQUENCE `+s+`.calls TO PUBLIC`)
	require.NoError(t, err)
}
