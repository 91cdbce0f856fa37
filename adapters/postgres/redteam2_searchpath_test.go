package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// A search_path that names a schema before pg_catalog is unsafe whether or
// not that schema exists yet: the server searches only schemas that exist,
// so current_schemas() leaves a missing one out, but a role holding CREATE
// on the database may create it at any time, and every statement prepared
// on the connection is then analysed again under the new path (PostgreSQL
// replans a cached statement when the schemas its search_path resolves to
// change). Here the role's search_path is "later, pg_catalog, public" with
// no schema later: once a store's connection is warm, a role that may only
// create schemas creates it with an = on bytea, which then runs, as the
// service's role and handed every key, inside its admissions. The store must refuse such a session
// from the start: nothing is admitted beyond the limit, no key is
// captured, and Ready, every admission and cleanup say why.
func TestSearchPathNamingAMissingSchemaBeforeTheCatalogIsRefused(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		ctx := context.Background()
		f := setup(t, e.cfg(postgres.Config{}))
		later := "later_" + randomName(t)
		svc := f.db.NewServiceRole(t, "public")
		f.db.SetRoleSetting(t, svc, "search_path", later, "pg_catalog", "public")
		pool := svc.NewPool(t, func(c *pgxpool.Config) { c.MaxConns = 1 })
		store, err := postgres.New(pool, e.cfg(postgres.Config{}))
		require.NoError(t, err)

		// The schema does not exist yet: the session's effective path
		// starts with pg_catalog.
		var first string
		require.NoError(t, pool.QueryRow(ctx, `SELECT (pg_catalog.current_schemas(true))[1]`).Scan(&first))
		require.Equal(t, "pg_catalog", first)

		p := policy(t, "search.path.later", 2, time.Hour)
		checks := e.checks(f, p, "subject")
		allowed := 0
		var errs []error
		admitAll := func(n int) {
			for range n {
				v, err := e.admit(ctx, store, checks)
				switch {
				case err != nil:
					errs = append(errs, err)
				case v.outcome == domain.Allowed:
					allowed++
				}
			}
		}
		readyErr := store.Ready(ctx)
		admitAll(1)

		plantLaterEquals(t, f.db, later)
		admitAll(5)

		require.LessOrEqual(t, allowed, 2, "admitted beyond the limit")
		require.Zero(t, laterCalls(t, f.db, later), "the look-alike = ran as the service's role")
		require.Len(t, errs, 6)
		for _, err := range errs {
			requireAdmissionError(t, err, postgres.OpAcquire, false)
			requireUnsafeSetting(t, err, "search_path")
		}
		requireUnsafeSetting(t, readyErr, "search_path")
		requireUnsafeSetting(t, store.Ready(ctx), "search_path")
		_, err = store.CleanupExpired(ctx, 10)
		requireUnsafeSetting(t, err, "search_path")
		f.requireAbsent(t, checks)
	})
}

// plantLaterEquals plays a role that may only create schemas in db: it
// creates schema with an = on bytea, usable by everyone, that answers as
// the built-in does and counts its calls in a sequence, which no rollback
// takes back: code of that role's, run with the service role's rights (it
// may delete any counter) and handed every key the store compares.
func plantLaterEquals(t *testing.T, db *pgtest.Database, schema string) {
	t.Helper()
	hostile := db.NewRole(t, "creator")
	_, err := db.Pool.Exec(context.Background(), "GRANT CREATE ON DATABASE "+pgx.Identifier{db.Name}.Sanitize()+
		" TO "+pgx.Identifier{hostile.Name}.Sanitize())
	require.NoError(t, err)
	s := pgx.Identifier{schema}.Sanitize()
	pool := hostile.NewPool(t, nil)
	_, err = pool.Exec(context.Background(), `
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

// laterCalls returns how many times the = plantLaterEquals planted in
// schema ran.
func laterCalls(t *testing.T, db *pgtest.Database, schema string) int64 {
	t.Helper()
	var n int64
	var called bool
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT last_value, is_called FROM "+pgx.Identifier{schema, "calls"}.Sanitize()).Scan(&n, &called))
	if !called {
		return 0
	}
	return n
}

// randomName returns 16 random hex digits, for names unique on the server.
func randomName(t *testing.T) string {
	t.Helper()
	var b [8]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return hex.EncodeToString(b[:])
}
