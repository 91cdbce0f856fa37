package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/migrations"
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

// callerContexts are the kinds of context a caller may pass, each of
// which the store serves on a path of its own.
var callerContexts = map[string]func() (context.Context, context.CancelFunc){
	"no deadline": func() (context.Context, context.CancelFunc) { return context.Background(), func() {} },
	"cancellable": func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
	"deadline": func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Minute)
	},
}

// hostPanicStore returns a fixture and a store on a pool of one
// connection, which the pool dials through wrap, as a host's DialFunc
// handing the driver a connection of its own would. The pool is closed
// when the test ends, unless it failed: closing a pool waits for its
// connections, and one that never came back would hold the test for good.
func hostPanicStore(t *testing.T, wrap func(net.Conn) net.Conn) (*fixture, *postgres.Store, *pgxpool.Pool) {
	t.Helper()
	f := setup(t, postgres.Config{})
	cfg, err := pgxpool.ParseConfig(f.db.URL)
	require.NoError(t, err)
	cfg.MaxConns = 1
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return wrap(conn), nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		if !t.Failed() {
			pool.Close()
		}
	})
	store, err := postgres.New(pool, postgres.Config{})
	require.NoError(t, err)
	return f, store, pool
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
	for name, newCtx := range callerContexts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var armed atomic.Bool
			f, store, pool := hostPanicStore(t, func(conn net.Conn) net.Conn { return &panickingConn{Conn: conn, armed: &armed} })
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
	var armed atomic.Bool
	f, store, pool := hostPanicStore(t, func(conn net.Conn) net.Conn { return &panickingConn{Conn: conn, armed: &armed} })
	// The only connection, cold, is the test's: a caller who gives up
	// waiting for one leaves the store waiting to warm it.
	conn, err := pool.Acquire(context.Background())
	require.NoError(t, err)
	c := f.check(policy(t, "host.panic", 5, time.Hour), "idle")
	_, err = store.AdmitCheck(newDeadlineStrikingWhenAwaited(), c)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	armed.Store(true)
	conn.Release()
	require.Eventually(t, func() bool { return !armed.Load() && pool.Stat().AcquiredConns() == 0 },
		failSafe, time.Millisecond, "the warm-up never met the panic, or kept the connection")
	require.Zero(t, pool.Stat().TotalConns(), "the connection the panic met was not closed")
	requireAllowed(t, admit(t, store, c))
}

// closePanickingConn is a connection made by a host's DialFunc whose
// Close panics while armed, once it has closed.
type closePanickingConn struct {
	net.Conn
	armed *atomic.Bool
}

func (c *closePanickingConn) Close() error {
	err := c.Conn.Close()
	if c.armed.CompareAndSwap(true, false) {
		panic(errHostPanic{})
	}
	return err
}

// TestAPanicOfTheHostsCodeAsTheStoreClosesTheConnectionReachesTheCaller:
// a connection the store closes (here one whose prepared statements were
// dropped) runs the host's code as it closes. A panic there reached the
// store's recovery after the connection had left the pool, which then
// closed it again and panicked itself ("cannot hijack already released
// or hijacked connection"): the caller got that panic instead of the
// host's, and on the goroutine that serves a caller with a deadline it
// ended the host's process (here the test binary). The caller now gets
// the host's panic, and the pool serves on.
func TestAPanicOfTheHostsCodeAsTheStoreClosesTheConnectionReachesTheCaller(t *testing.T) {
	t.Parallel()
	for name, newCtx := range callerContexts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var armed atomic.Bool
			f, store, pool := hostPanicStore(t, func(conn net.Conn) net.Conn { return &closePanickingConn{Conn: conn, armed: &armed} })
			c := f.check(policy(t, "host.panic.close", 5, time.Hour), name)
			requireAllowed(t, admit(t, store, c)) // connects and warms up
			requireNoneAcquired(t, pool)
			// The admission fails on a connection that lost its
			// statements, which the store then closes.
			conn, err := pool.Acquire(context.Background())
			require.NoError(t, err)
			_, err = conn.Conn().PgConn().Exec(context.Background(), "DEALLOCATE ALL").ReadAll()
			require.NoError(t, err)
			conn.Release()

			ctx, cancel := newCtx()
			defer cancel()
			armed.Store(true)
			require.PanicsWithValue(t, errHostPanic{}, func() { _, _ = store.AdmitCheck(ctx, c) })
			require.False(t, armed.Load(), "the store did not close the connection")
			requireNoneAcquired(t, pool)
			requireAllowed(t, admit(t, store, c))
		})
	}
}

// TestAPanicOfTheHostsCodeAsTheWarmUpClosesAnIdleConnectionIsContained:
// the warm-up of idle connections closes a connection it could not warm
// (here one that holds a statement under one of the store's names), on a
// goroutine of the store's. A panic of the host's code as the connection
// closed ended the host's process (here the test binary); the store now
// serves on.
func TestAPanicOfTheHostsCodeAsTheWarmUpClosesAnIdleConnectionIsContained(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	f, store, pool := hostPanicStore(t, func(conn net.Conn) net.Conn { return &closePanickingConn{Conn: conn, armed: &armed} })
	// The only connection, cold, is the test's: a caller who gives up
	// waiting for one leaves the store waiting to warm it, which fails.
	conn, err := pool.Acquire(context.Background())
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(migrations.DefaultSchema))
	_, err = conn.Conn().PgConn().Exec(context.Background(),
		"PREPARE runlimit_"+hex.EncodeToString(sum[:4])+"_read_one AS SELECT 1").ReadAll()
	require.NoError(t, err)
	c := f.check(policy(t, "host.panic.close", 5, time.Hour), "idle")
	_, err = store.AdmitCheck(newDeadlineStrikingWhenAwaited(), c)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	armed.Store(true)
	conn.Release()
	require.Eventually(t, func() bool { return !armed.Load() && pool.Stat().TotalConns() == 0 },
		failSafe, time.Millisecond, "the warm-up never closed the connection it could not warm")
	requireAllowed(t, admit(t, store, c))
}

// twicePanickingConn panics on its next read, and again as it closes.
type twicePanickingConn struct {
	net.Conn
	reads, closes *atomic.Bool
}

func (c *twicePanickingConn) Read(b []byte) (int, error) {
	if c.reads.CompareAndSwap(true, false) {
		panic(errHostPanic{})
	}
	return c.Conn.Read(b)
}

func (c *twicePanickingConn) Close() error {
	err := c.Conn.Close()
	if c.closes.CompareAndSwap(true, false) {
		panic("a second panic, as the connection closes")
	}
	return err
}

// TestTheFirstPanicOfTheHostsCodeReachesTheCaller: a connection whose
// host code panics mid-admission, and again as the store closes it after
// the first panic, gives the caller the first panic; on the goroutine
// serving a caller with a deadline the second ended the host's process.
func TestTheFirstPanicOfTheHostsCodeReachesTheCaller(t *testing.T) {
	t.Parallel()
	var reads, closes atomic.Bool
	f, store, pool := hostPanicStore(t, func(conn net.Conn) net.Conn { return &twicePanickingConn{Conn: conn, reads: &reads, closes: &closes} })
	c := f.check(policy(t, "host.panic.twice", 5, time.Hour), "twice")
	requireAllowed(t, admit(t, store, c)) // connects and warms up
	requireNoneAcquired(t, pool)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	closes.Store(true)
	reads.Store(true)
	require.PanicsWithValue(t, errHostPanic{}, func() { _, _ = store.AdmitCheck(ctx, c) })
	require.False(t, closes.Load(), "the store did not close the connection")
	requireNoneAcquired(t, pool)
	requireAllowed(t, admit(t, store, c))
}
