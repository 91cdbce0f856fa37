package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

// An allowed admission costs two round trips and a denied one a round trip
// and its rollback, whatever the batch size.
func TestAdmitRoundTrips(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	store, _, w := f.newWiredStore(t, postgres.Config{})
	p := policy(t, "trips", 3, time.Hour)
	one := []domain.Check{f.check(p, "one")}
	many := []domain.Check{f.check(p, "a"), f.check(p, "b"), f.check(p, "c"), f.check(p, "d")}
	// Warm up: connect and let pgx prepare each statement once per
	// connection (the update path on the second call).
	requireAllowed(t, admit(t, store, one...))
	requireAllowed(t, admit(t, store, one...))
	requireAllowed(t, admit(t, store, many...))
	requireAllowed(t, admit(t, store, many...))
	stored := f.check(p, "stored")
	requireAllowed(t, admit(t, store, stored))

	count := func(checks []domain.Check) (domain.Outcome, int64) {
		before := w.trips.Load()
		d := admit(t, store, checks...)
		return d.Outcome(), w.trips.Load() - before
	}
	outcome, n := count(one)
	require.Equal(t, domain.Allowed, outcome)
	require.Equal(t, int64(2), n)
	outcome, n = count(many)
	require.Equal(t, domain.Allowed, outcome)
	require.Equal(t, int64(2), n)
	outcome, n = count(many)
	require.Equal(t, domain.Denied, outcome)
	require.Equal(t, int64(2), n, "round trip 1, then ROLLBACK")

	// A batch of a stored key and a new one updates and inserts in round
	// trip 2.
	outcome, n = count([]domain.Check{f.check(p, "new"), stored})
	require.Equal(t, domain.Allowed, outcome)
	require.Equal(t, int64(2), n)

	// AdmitCheck takes the same two round trips: an insert, an update, and
	// a denial with its rollback.
	single := policy(t, "trips.single", 2, time.Hour)
	warm := f.check(single, "warm")
	_, err := store.AdmitCheck(context.Background(), warm)
	require.NoError(t, err)
	checkTrips := func(c domain.Check) (domain.Outcome, int64) {
		before := w.trips.Load()
		d, err := store.AdmitCheck(context.Background(), c)
		require.NoError(t, err)
		return d.Outcome(), w.trips.Load() - before
	}
	sc := f.check(single, "c")
	outcome, n = checkTrips(sc)
	require.Equal(t, domain.Allowed, outcome)
	require.Equal(t, int64(2), n, "insert")
	outcome, n = checkTrips(sc)
	require.Equal(t, domain.Allowed, outcome)
	require.Equal(t, int64(2), n, "update")
	outcome, n = checkTrips(sc)
	require.Equal(t, domain.Denied, outcome)
	require.Equal(t, int64(2), n, "round trip 1, then ROLLBACK")
}

// A connection new to the store is made ready (its settings checked, every
// statement prepared, the costly first runs done) in one pipelined round
// trip before it serves its first admission, on every entry point: a cold
// connection costs a caller one round trip more than a warm one, not one
// per statement. The connection is opened first, so that only the store's
// own round trips are counted, not the server's startup and
// authentication, which are pgx's.
func TestNewConnectionIsReadyInOneRoundTrip(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		store, pool, w := f.newWiredStore(t, e.cfg(postgres.Config{}))
		conn, err := pool.Acquire(context.Background())
		require.NoError(t, err)
		conn.Release()
		p := policy(t, "trips.cold", 3, time.Hour)

		before := w.trips.Load()
		e.allow(t, store, e.checks(f, p, "first"))
		require.Equal(t, int64(1+2), w.trips.Load()-before, "the warm-up, then the admission's two")
		before = w.trips.Load()
		e.allow(t, store, e.checks(f, p, "second"))
		require.Equal(t, int64(2), w.trips.Load()-before, "a warm connection")
		require.Equal(t, int32(1), pool.Stat().TotalConns(), "the first admission kept the connection it warmed")
	})
}
