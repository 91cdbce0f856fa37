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
)

// panickingConn is a connection made by a host's DialFunc whose reads
// panic while armed: host code that the driver runs on the store's
// connection, as a notice handler or a tracer is.
type panickingConn struct {
	net.Conn
	armed *atomic.Bool
}

// errHostPanic is the value the host's code panics with.
type errHostPanic struct{}

func (c *panickingConn) Read(b []byte) (int, error) {
	if c.armed.CompareAndSwap(true, false) {
		panic(errHostPanic{})
	}
	return c.Conn.Read(b)
}

// TestAPanicOfTheHostsCodeGivesTheConnectionBack: a panic of the host's
// code on the store's connection, in the middle of an admission, reaches
// the caller, as a store's panics do, whatever the caller's context, and
// the connection is closed and leaves the pool. It used to stay acquired
// for good, so that a pool whose every connection met one served no one
// again; and on the goroutine that serves a caller with a deadline, the
// panic ended the test binary, as it would the host's process.
func TestAPanicOfTheHostsCodeGivesTheConnectionBack(t *testing.T) {
	t.Parallel()
	contexts := map[string]func() (context.Context, context.CancelFunc){
		"no deadline": func() (context.Context, context.CancelFunc) { return context.Background(), func() {} },
		"cancellable": func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
		"deadline": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Minute)
		},
	}
	for name, newCtx := range contexts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, postgres.Config{})
			var armed atomic.Bool
			cfg, err := pgxpool.ParseConfig(f.db.URL)
			require.NoError(t, err)
			cfg.MaxConns = 1
			dial := cfg.ConnConfig.DialFunc
			cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &panickingConn{Conn: conn, armed: &armed}, nil
			}
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			require.NoError(t, err)
			t.Cleanup(func() {
				// Closing a pool waits for its connections: one that never
				// came back would hold the test for good.
				if !t.Failed() {
					pool.Close()
				}
			})
			store, err := postgres.New(pool, postgres.Config{})
			require.NoError(t, err)
			c := f.check(policy(t, "host.panic", 5, time.Hour), name)
			requireAllowed(t, admit(t, store, c)) // connects and warms up
			requireNoneAcquired(t, pool)

			ctx, cancel := newCtx()
			defer cancel()
			armed.Store(true)
			require.PanicsWithValue(t, errHostPanic{}, func() { _, _ = store.AdmitCheck(ctx, c) })
			require.Zero(t, pool.Stat().AcquiredConns(), "the connection the panic met is still acquired")
			// The pool serves again, on a new connection.
			requireAllowed(t, admit(t, store, c))
		})
	}
}

// TestAPanicOfTheHostsCodeWhileWarmingIdleConnectionsIsContained: the
// warm-up of idle connections runs on a goroutine of the store's, for no
// caller. A panic of the host's code on the connection it warms ended
// the host's process (here the test binary); the connection is now
// closed, and the store serves on.
func TestAPanicOfTheHostsCodeWhileWarmingIdleConnectionsIsContained(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	var armed atomic.Bool
	store, pool := f.newStore(t, postgres.Config{}, func(c *pgxpool.Config) {
		c.MaxConns = 1
		dial := c.ConnConfig.DialFunc
		c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &panickingConn{Conn: conn, armed: &armed}, nil
		}
	})
	// The only connection, cold, is the test's: a caller who gives up
	// waiting for one leaves the store waiting to warm it.
	conn, err := pool.Acquire(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	c := f.check(policy(t, "host.panic", 5, time.Hour), "idle")
	_, err = store.AdmitCheck(ctx, c)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	armed.Store(true)
	conn.Release()
	require.Eventually(t, func() bool { return !armed.Load() && pool.Stat().AcquiredConns() == 0 },
		failSafe, time.Millisecond, "the warm-up never met the panic, or kept the connection")
	require.Zero(t, pool.Stat().TotalConns(), "the connection the panic met was not closed")
	requireAllowed(t, admit(t, store, c))
}
