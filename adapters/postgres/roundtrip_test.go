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
