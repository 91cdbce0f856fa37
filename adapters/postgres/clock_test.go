package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

// A clock_timestamp() planted ahead of pg_catalog on the search_path, as a
// hostile role with CREATE on a schema could, and a search_path in the
// connection's startup parameters (a database URL's options) that searches
// it before pg_catalog: every clock call of the store and its triggers is
// schema-qualified, but its operators and casts are not, so the store
// refuses such a session (see TestSearchPathBeforeTheCatalogIsRefused)
// on every entry point, and nothing is stored.
func TestHostileClockOnSearchPathChangesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	ctx := context.Background()
	_, err := f.db.Pool.Exec(ctx, `
		CREATE SCHEMA hostile;
		CREATE FUNCTION hostile.clock_timestamp() RETURNS timestamptz LANGUAGE sql
			AS $$ SELECT timestamptz '2001-02-03 04:05:06+00' $$;
		CREATE FUNCTION hostile.now() RETURNS timestamptz LANGUAGE sql
			AS $$ SELECT timestamptz '2001-02-03 04:05:06+00' $$;`)
	require.NoError(t, err)
	store, pool := f.newStore(t, postgres.Config{}, func(c *pgxpool.Config) {
		c.ConnConfig.RuntimeParams["search_path"] = "hostile, pg_catalog, public"
	})
	// The trap is armed: an unqualified call on this pool reaches it.
	var trap time.Time
	require.NoError(t, pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&trap))
	require.Equal(t, 2001, trap.UTC().Year())

	p := policy(t, "hostile", 2, time.Hour)
	c := f.check(p, "c")
	batch := []domain.Check{f.check(p, "d"), f.check(p, "e")}
	_, err = tryAdmit(ctx, store, c)
	requireAdmissionError(t, err, postgres.OpAcquire, false)
	requireUnsafeSetting(t, err, "search_path")
	_, err = store.AdmitCheck(ctx, c)
	requireUnsafeSetting(t, err, "search_path")
	_, err = tryAdmit(ctx, store, batch...)
	requireUnsafeSetting(t, err, "search_path")
	requireUnsafeSetting(t, store.Ready(ctx), "search_path")
	_, err = store.CleanupExpired(ctx, 10)
	requireUnsafeSetting(t, err, "search_path")
	require.Zero(t, f.rowCount(t))
	for _, c := range append(batch, c) {
		require.Zero(t, f.ledger(t, postgres.ShardOf(c.CounterKey())))
	}
}

// A check that waited on a lock while its window ended sees the window
// expired: the store samples the clock only once it holds every lock. The
// lock holder ends the window at the database's present moment, which is
// after the waiting admission began, so a clock read before the wait would
// still see the window active and deny.
func TestAdmitWaitingOnALockSeesTheTimeAfterIt(t *testing.T) {
	t.Parallel()
	// A batch, a batch of one and AdmitCheck take different statements;
	// all must wait.
	for _, tc := range []struct {
		lock string
		path string
	}{
		{"advisory", "check"}, {"row", "check"},
		{"advisory", "one"}, {"row", "one"},
		{"advisory", "batch"}, {"row", "batch"},
	} {
		name := tc.lock + "/" + tc.path
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, postgres.Config{})
			app := "waiter-" + strings.ReplaceAll(name, "/", "-")
			store, _ := f.newStore(t, postgres.Config{}, named(app))
			p := policy(t, "waited", 1, time.Hour)
			c := f.check(p, "c")
			requireAllowed(t, admit(t, f.store, c))
			checks := []domain.Check{c}
			if tc.path == "batch" {
				checks = append(checks, f.check(p, "fresh"))
			}

			tx := f.hold(t)
			if tc.lock == "advisory" {
				lockAdvisory(t, tx, c)
			} else {
				lockRow(t, tx, c)
			}
			outcomes := make(chan outcome, 1)
			go func() {
				if tc.path == "check" {
					d, err := store.AdmitCheck(context.Background(), c)
					outcomes <- outcome{d.Outcome(), err}
					return
				}
				d, err := tryAdmit(context.Background(), store, checks...)
				outcomes <- outcome{d.Outcome(), err}
			}()
			f.waitForLockWait(t, app)
			k := c.CounterKey().Bytes()
			_, err := tx.Exec(context.Background(), `UPDATE runlimit_fixed_windows AS w
				SET window_started_at = n.t - interval '1 hour', window_expires_at = n.t
				FROM (SELECT pg_catalog.clock_timestamp() AS t) AS n
				WHERE w.config_fingerprint = $1 AND w.subject_key = $2`, k[:32], k[32:])
			require.NoError(t, err)
			var ended time.Time
			require.NoError(t, tx.QueryRow(context.Background(), `SELECT window_expires_at FROM runlimit_fixed_windows
				WHERE config_fingerprint = $1 AND subject_key = $2`, k[:32], k[32:]).Scan(&ended))
			require.NoError(t, tx.Commit(context.Background()))

			r := <-outcomes
			require.NoError(t, r.err)
			require.Equal(t, domain.Allowed, r.outcome)
			got, _ := f.stored(t, c)
			require.Equal(t, int64(1), got.Used)
			require.GreaterOrEqual(t, got.Start, domain.InstantFromTime(ended))
		})
	}
}

// A new key waits for its shard's ledger row, then for the clock: the
// window it gets starts after the ledger lock was released, so the clock
// was read after the last lock of the protocol.
func TestAdmitWaitingOnTheLedgerSeesTheTimeAfterIt(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"check", "one", "batch"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			f := setup(t, postgres.Config{})
			app := "ledger-waiter-" + path
			store, _ := f.newStore(t, postgres.Config{}, named(app))
			p := policy(t, "ledger.waited", 1, time.Hour)
			fresh := f.checksInShard(t, p, 42, 2)
			checks := fresh[:1]
			if path == "batch" {
				checks = fresh
			}

			tx := f.hold(t)
			_, err := tx.Exec(context.Background(), "SELECT FROM runlimit_capacity_shards WHERE capacity_shard = 42 FOR UPDATE")
			require.NoError(t, err)
			outcomes := make(chan outcome, 1)
			go func() {
				if path == "check" {
					d, err := store.AdmitCheck(context.Background(), fresh[0])
					outcomes <- outcome{d.Outcome(), err}
					return
				}
				d, err := tryAdmit(context.Background(), store, checks...)
				outcomes <- outcome{d.Outcome(), err}
			}()
			f.waitForLockWait(t, app)
			var released time.Time
			require.NoError(t, tx.QueryRow(context.Background(), "SELECT pg_catalog.clock_timestamp()").Scan(&released))
			require.NoError(t, tx.Commit(context.Background()))

			r := <-outcomes
			require.NoError(t, r.err)
			require.Equal(t, domain.Allowed, r.outcome)
			for _, c := range checks {
				got, ok := f.stored(t, c)
				require.True(t, ok)
				require.GreaterOrEqual(t, got.Start, domain.InstantFromTime(released))
			}
			require.Equal(t, int64(len(checks)), f.ledger(t, 42))
		})
	}
}

// outcome is what an admission run on another goroutine reports.
type outcome struct {
	outcome domain.Outcome
	err     error
}

// A stored key needs no slot, so its admission never waits for its shard's
// ledger row, which thousands of counters share: with that row locked by
// another transaction, renewals on the shard are still admitted, on every
// path. (The single check's read locks the ledger row only when it found
// no counter; an admission that waited here would fail when its budget ran
// out.)
func TestAdmitOfAStoredKeyLeavesTheLedgerAlone(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"check", "one", "batch"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			f := setup(t, postgres.Config{})
			p := policy(t, "ledger.untouched", 5, time.Hour)
			stored := f.checksInShard(t, p, 42, 2)
			requireAllowed(t, admit(t, f.store, stored...))
			checks := stored[:1]
			if path == "batch" {
				checks = stored
			}

			tx := f.hold(t)
			_, err := tx.Exec(context.Background(), "SELECT FROM runlimit_capacity_shards WHERE capacity_shard = 42 FOR UPDATE")
			require.NoError(t, err)
			if path == "check" {
				d, err := f.store.AdmitCheck(context.Background(), stored[0])
				require.NoError(t, err)
				require.Equal(t, domain.Allowed, d.Outcome())
			} else {
				requireAllowed(t, admit(t, f.store, checks...))
			}
			for _, c := range checks {
				got, ok := f.stored(t, c)
				require.True(t, ok)
				require.Equal(t, int64(2), got.Used)
			}
			require.NoError(t, tx.Commit(context.Background()))
			require.Equal(t, int64(2), f.ledger(t, 42))
		})
	}
}
