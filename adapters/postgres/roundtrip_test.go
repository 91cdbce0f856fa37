package postgres_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

// tripConn counts network round trips: each turn from writing to reading is
// one request waiting for its answer.
type tripConn struct {
	net.Conn
	writing atomic.Bool
	trips   *atomic.Int64
}

func (c *tripConn) Write(b []byte) (int, error) {
	c.writing.Store(true)
	return c.Conn.Write(b)
}

func (c *tripConn) Read(b []byte) (int, error) {
	if c.writing.Swap(false) {
		c.trips.Add(1)
	}
	return c.Conn.Read(b)
}

// An allowed admission costs two round trips and a denied one a round trip
// and its rollback, whatever the batch size.
func TestAdmitRoundTrips(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	var trips atomic.Int64
	store, _ := f.newStore(t, postgres.Config{}, func(c *pgxpool.Config) {
		c.MaxConns = 1
		c.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
		dial := c.ConnConfig.DialFunc
		c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &tripConn{Conn: conn, trips: &trips}, nil
		}
	})
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
		before := trips.Load()
		d := admit(t, store, checks...)
		return d.Outcome(), trips.Load() - before
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
}
