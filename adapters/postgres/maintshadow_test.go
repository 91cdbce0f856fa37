package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
)

// A search_path that names pg_catalog first is one the store serves, so a
// schema named after it is searched by every maintenance statement, and a
// role that may only create schemas can fill it: here with an = on tid,
// a <= on timestamptz and a < on smallint that are always true, and would
// let a cleanup delete every counter, expired or not, and sort the ledger
// wrongly. Cleanup must still remove exactly the expired counters, and
// Stats count the real ledger: the built-ins, found first, are exact
// matches, so no look-alike is ever chosen.
func TestMaintenanceIgnoresOperatorsOfASchemaSearchedAfterTheCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, postgres.Config{})
	later := "after_" + randomName(t)
	hostile := f.db.NewRole(t, "creator")
	_, err := f.db.Pool.Exec(ctx, "GRANT CREATE ON DATABASE "+pgx.Identifier{f.db.Name}.Sanitize()+
		" TO "+pgx.Identifier{hostile.Name}.Sanitize())
	require.NoError(t, err)
	s := pgx.Identifier{later}.Sanitize()
	_, err = hostile.NewPool(t, nil).Exec(ctx, `
		CREATE SCHEMA `+s+`;
		CREATE FUNCTION `+s+`.yes_tid(a tid, b tid) RETURNS boolean LANGUAGE sql AS 'SELECT true';
		CREATE OPERATOR `+s+`.= (LEFTARG = tid, RIGHTARG = tid, FUNCTION = `+s+`.yes_tid);
		CREATE FUNCTION `+s+`.yes_ts(a timestamptz, b timestamptz) RETURNS boolean LANGUAGE sql AS 'SELECT true';
		CREATE OPERATOR `+s+`.<= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = `+s+`.yes_ts);
		CREATE FUNCTION `+s+`.yes_int2(a smallint, b smallint) RETURNS boolean LANGUAGE sql AS 'SELECT true';
		CREATE OPERATOR `+s+`.< (LEFTARG = smallint, RIGHTARG = smallint, FUNCTION = `+s+`.yes_int2);
		GRANT USAGE ON SCHEMA `+s+` TO PUBLIC`)
	require.NoError(t, err)

	svc := f.db.NewServiceRole(t, "public")
	f.db.SetRoleSetting(t, svc, "search_path", "pg_catalog", later, "public")
	store, err := postgres.New(svc.NewPool(t, func(c *pgxpool.Config) { c.MaxConns = 1 }), postgres.Config{})
	require.NoError(t, err)
	require.NoError(t, store.Ready(ctx))

	p := policy(t, "maintenance.after", 5, time.Hour)
	expired, active := f.check(p, "expired"), f.check(p, "active")
	requireAllowed(t, admit(t, store, expired))
	shift(t, f.db.Pool, 2*time.Hour)
	requireAllowed(t, admit(t, store, active))

	removed, err := store.CleanupExpired(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, removed)
	_, ok := f.stored(t, active)
	require.True(t, ok, "cleanup removed a counter that had not expired")
	_, ok = f.stored(t, expired)
	require.False(t, ok)
	requireLedgerExact(t, f, "after cleanup")

	st, err := store.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), st.Entries)
	require.Equal(t, postgres.ShardCount, len(st.Headroom))
	require.Equal(t, st.Capacity-1, sum(st.Headroom))
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}
