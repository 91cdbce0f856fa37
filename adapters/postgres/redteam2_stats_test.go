package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// Stats and TableStats read under settings Ready refuses: they serve
// dashboards, and their answers are right whatever the session's settings,
// since every name in them is qualified. Under a search_path that names a
// schema before pg_catalog, whose = on oid is always true and takes a
// session-level advisory lock as a witness (code of another role's, run
// with the service role's rights on a pooled connection, which could as
// well change the session's settings for every later admission on it),
// they must still call only the built-ins and report the real table.
func TestStatsCallNoOperatorOfTheSearchPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, postgres.Config{})
	p := policy(t, "stats.lookalike", 5, time.Hour)
	requireAllowed(t, admit(t, f.store, f.check(p, "a"), f.check(p, "b")))

	svc := f.db.NewServiceRole(t, "public")
	schema := "lookalike_" + randomName(t)
	plantOidEquals(t, f.db, schema)
	ran := func() bool {
		t.Helper()
		var n int
		require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_locks
			WHERE locktype = 'advisory' AND classid = 0 AND objid = 4242 AND objsubid = 1
			  AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())`).Scan(&n))
		return n > 0
	}
	f.db.SetRoleSetting(t, svc, "search_path", schema, "pg_catalog", "public")
	pool := svc.NewPool(t, nil)
	store, err := postgres.New(pool, postgres.Config{})
	require.NoError(t, err)

	// The trap is set: the session's = on oid is the look-alike (checked
	// on a connection of its own, which the lock it takes leaves with).
	check := svc.NewPool(t, nil)
	var same bool
	require.NoError(t, check.QueryRow(ctx, `SELECT 1::oid = 2::oid`).Scan(&same))
	require.True(t, same)
	require.True(t, ran())
	check.Close()
	require.Eventually(t, func() bool { return !ran() }, 10*time.Second, 10*time.Millisecond)

	ts, err := store.TableStats(ctx)
	require.NoError(t, err)
	require.False(t, ran(), "the look-alike = ran as the service's role")
	require.Equal(t, int64(2), ts.Rows)
	var size int64
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT pg_catalog.pg_table_size('public.runlimit_fixed_windows'::regclass)`).Scan(&size))
	require.Equal(t, size, ts.TableBytes)
	st, err := store.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), st.Entries)
	require.False(t, ran(), "the look-alike = ran as the service's role")
	requireUnsafeSetting(t, store.Ready(ctx), "search_path")
}

// plantOidEquals creates schema, usable by everyone, with an = on oid that
// is always true and takes the session-level advisory lock 4242.
func plantOidEquals(t *testing.T, db *pgtest.Database, schema string) {
	t.Helper()
	s := pgx.Identifier{schema}.Sanitize()
	_, err := db.Pool.Exec(context.Background(), `
		CREATE SCHEMA `+s+`;
		CREATE FUNCTION `+s+`.eq(a oid, b oid) RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN
			PERFORM pg_catalog.pg_advisory_lock(4242);
			RETURN true;
		END $$;
		CREATE OPERATOR `+s+`.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = `+s+`.eq);
		GRANT USAGE ON SCHEMA `+s+` TO PUBLIC`)
	require.NoError(t, err)
}
