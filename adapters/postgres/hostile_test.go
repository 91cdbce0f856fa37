package postgres_test

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// A role that may only create schemas plants one named after the service's
// role, first on its default search_path, with look-alikes of the lock
// function, the tables and the built-ins the store calls, all of which
// would admit every check and capture its keys. The store, connected as a
// role holding exactly the documented privileges, never reaches them: it
// admits exactly the limit, on single checks and on batches, and its
// cleanup and stats see only the real tables.
func TestHostileSchemaCannotRedirectTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	svc := db.NewServiceRole(t, "public")
	db.PlantShadowSchema(t, svc.Name)
	pool := svc.NewPool(t, nil)

	// The trap is set: by name, the service's session finds the
	// look-alikes first.
	var table, function string
	require.NoError(t, pool.QueryRow(ctx, `SELECT
		(SELECT c.relnamespace::regnamespace::text FROM pg_catalog.pg_class AS c
		 WHERE c.oid = pg_catalog.to_regclass('runlimit_fixed_windows')),
		(SELECT p.pronamespace::regnamespace::text FROM pg_catalog.pg_proc AS p
		 WHERE p.oid = pg_catalog.to_regprocedure('runlimit_lock_counter(bigint, bytea, bytea, smallint, text, text)'))`).Scan(&table, &function))
	require.Equal(t, svc.Name, table)
	require.Equal(t, svc.Name, function)

	store, err := postgres.New(pool, postgres.Config{})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("runlimit postgres store tests, 32+ bytes of secret"))
	require.NoError(t, err)
	f := &fixture{db: db, store: store, hasher: hasher}
	p := policy(t, "hostile", 2, time.Hour)

	one := f.check(p, "single")
	require.Equal(t, 2, allowedOf(t, store, one, 5), "single checks")

	for _, pair := range [][]domain.Check{
		{f.check(p, "batch-a"), f.check(p, "batch-b")},
		{f.check(p, "batch-c")}, // a batch of one takes the single-check statements
	} {
		allowed := 0
		for range 5 {
			d, err := tryAdmit(ctx, store, pair...)
			require.NoError(t, err)
			if d.Outcome() == domain.Allowed {
				allowed++
			}
		}
		require.Equal(t, 2, allowed, "batches of %d", len(pair))
	}

	// The optimistic protocol's statements name everything in full too: its
	// read, its conditional update and its insert of a new key. Its read
	// has no lock function to be captured by, so the look-alikes are set
	// to deny it instead: the look-alike table holds the key's counter,
	// active and used up, and the look-alike ledger's 7 rows per shard fill
	// every shard of a store bounded at 7.
	optimistic := f.check(p, "optimistic")
	k := optimistic.CounterKey().Bytes()
	shadow := quote(svc.Name) + ".runlimit_fixed_windows"
	_, err = db.Pool.Exec(ctx, `ALTER TABLE `+shadow+` DISABLE TRIGGER capture;
		INSERT INTO `+shadow+` VALUES ('hostile', 'client', '\x`+hex.EncodeToString(k[:32])+`', '\x`+hex.EncodeToString(k[32:])+`',
			pg_catalog.now() - interval '1 minute', pg_catalog.now() + interval '1 hour', 2);
		ALTER TABLE `+shadow+` ENABLE TRIGGER capture`)
	require.NoError(t, err)
	// Its writes would not be denied by look-alikes but made to conflict,
	// and the check would then fall back to the locked protocol: the store
	// runs on a wire that counts round trips, and each allowed check takes
	// exactly two, a denied one one, so no write conflicted.
	w := newWire()
	wired := svc.NewPool(t, w.install)
	opt, err := postgres.New(wired, postgres.Config{Protocol: postgres.Optimistic, RowsPerShard: 7})
	require.NoError(t, err)
	require.NoError(t, opt.Ready(ctx))
	for i, want := range []struct {
		allowed bool
		trips   int64
	}{{true, 2}, {true, 2}, {false, 1}, {false, 1}, {false, 1}} {
		before := w.trips.Load()
		d, err := opt.AdmitCheck(ctx, optimistic)
		require.NoError(t, err)
		require.Equal(t, want.allowed, d.PermitsRequest(), "optimistic single check %d", i)
		require.Equal(t, want.trips, w.trips.Load()-before, "optimistic single check %d", i)
	}

	require.Zero(t, db.ShadowCaptures(t, svc.Name), "the look-alikes saw keys")
	got, ok := f.stored(t, one)
	require.True(t, ok)
	require.Equal(t, int64(2), got.Used)

	// Stats count the real ledger (5 counters), not the look-alike's.
	st, err := store.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(5), st.Entries)
	ts, err := store.TableStats(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(5), ts.Rows)
	require.Positive(t, ts.TableBytes)

	// Cleanup deletes the real expired counters and leaves the look-alike
	// table alone.
	shift(t, db.Pool, 2*time.Hour)
	removed, err := store.CleanupExpired(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 5, removed)
	require.Zero(t, f.rowCount(t))
	var shadowRows int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+shadow).Scan(&shadowRows))
	require.Equal(t, 2, shadowRows)
	require.Zero(t, db.ShadowCaptures(t, svc.Name))
}

// allowedOf checks c n times through AdmitCheck and returns how many were
// allowed.
func allowedOf(t *testing.T, s *postgres.Store, c domain.Check, n int) int {
	t.Helper()
	allowed := 0
	for range n {
		d, err := s.AdmitCheck(context.Background(), c)
		require.NoError(t, err)
		if d.PermitsRequest() {
			allowed++
		}
	}
	return allowed
}

func quote(name string) string { return `"` + name + `"` }
