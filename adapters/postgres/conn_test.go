package postgres_test

import (
	"context"
	"encoding/binary"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
)

// wire watches the connections of a pool: it counts network round trips
// (each turn from reading to writing starts one request, which then waits
// for its answer) and can stall reads from a given round trip on, as a network
// partition would, until the client gives up and sets a deadline, or until
// the test lets them through. Cancel requests, which the driver sends on
// connections of their own, are counted apart and never stalled.
type wire struct {
	trips     atomic.Int64
	cancels   atomic.Int64
	stallFrom atomic.Int64 // 0: never stall
	held      chan struct{}
	heldOnce  sync.Once
	release   chan struct{} // closed: stalled reads go through
}

func newWire() *wire {
	return &wire{held: make(chan struct{}), release: make(chan struct{})}
}

// stallNext makes the round trip after next-1 more ones, and every later
// one, hang until the client sets a deadline.
func (w *wire) stallNext(next int64) { w.stallFrom.Store(w.trips.Load() + next) }

// holdNext makes the round trip after next-1 more ones hang, its answer
// held back by the network, until the test calls the returned function (or
// the client sets a deadline). held is closed once that round trip hangs.
func (w *wire) holdNext(next int64) (held <-chan struct{}, let func()) {
	w.stallNext(next)
	return w.held, func() {
		w.stallFrom.Store(0)
		close(w.release)
	}
}

// cancelRequestCode opens a cancel request, in place of a protocol version.
const cancelRequestCode = 80877102

type wireConn struct {
	net.Conn
	w       *wire
	writing atomic.Bool
	first   sync.Once
	cancel  bool // the connection carries a cancel request

	mu   sync.Mutex
	wake chan struct{} // closed when a deadline in the past is set
}

func (c *wireConn) Write(b []byte) (int, error) {
	c.first.Do(func() {
		if len(b) >= 8 && binary.BigEndian.Uint32(b[4:8]) == cancelRequestCode {
			c.cancel = true
			c.w.cancels.Add(1)
		}
	})
	// A trip is counted as its request is written, not as a read
	// begins: the driver's background reader, started when a write is
	// slow, can have a read under way before the next request is written,
	// and that read then returns its answer.
	if !c.cancel && !c.writing.Swap(true) {
		c.w.trips.Add(1)
	}
	return c.Conn.Write(b)
}

func (c *wireConn) Read(b []byte) (int, error) {
	if c.cancel {
		return c.Conn.Read(b)
	}
	c.writing.Store(false)
	trip := c.w.trips.Load()
	if from := c.w.stallFrom.Load(); from > 0 && trip >= from {
		c.w.heldOnce.Do(func() { close(c.w.held) })
		c.mu.Lock()
		wake := c.wake
		c.mu.Unlock()
		select {
		case <-wake:
			return 0, os.ErrDeadlineExceeded
		case <-c.w.release:
		}
	}
	return c.Conn.Read(b)
}

func (c *wireConn) SetDeadline(t time.Time) error {
	c.poke(t)
	return c.Conn.SetDeadline(t)
}

func (c *wireConn) SetReadDeadline(t time.Time) error {
	c.poke(t)
	return c.Conn.SetReadDeadline(t)
}

// poke wakes a stalled read when the client sets a deadline that has
// passed, which is how pgconn interrupts a read when its context ends.
func (c *wireConn) poke(t time.Time) {
	if t.IsZero() || t.After(time.Now()) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.wake:
	default:
		close(c.wake)
	}
}

// newWiredStore opens a store on f's database through a one-connection pool
// whose wire the test watches.
func (f *fixture) newWiredStore(t *testing.T, cfg postgres.Config) (*postgres.Store, *pgxpool.Pool, *wire) {
	t.Helper()
	return f.newWiredStoreWith(t, cfg, nil)
}

// newNamedWiredStore is newWiredStore whose connection carries
// application name app, for a test that watches it in pg_stat_activity
// too.
func (f *fixture) newNamedWiredStore(t *testing.T, cfg postgres.Config, app string) (*postgres.Store, *pgxpool.Pool, *wire) {
	t.Helper()
	return f.newWiredStoreWith(t, cfg, named(app))
}

// newWiredStoreWith is newWiredStore whose pool configure sets up first,
// unless it is nil; the pool keeps one connection.
func (f *fixture) newWiredStoreWith(t *testing.T, cfg postgres.Config, configure func(*pgxpool.Config)) (*postgres.Store, *pgxpool.Pool, *wire) {
	t.Helper()
	w := newWire()
	store, pool := f.newStore(t, cfg, func(c *pgxpool.Config) {
		if configure != nil {
			configure(c)
		}
		w.install(c)
	})
	return store, pool, w
}

// install makes c a one-connection pool whose connections go through w.
func (w *wire) install(c *pgxpool.Config) {
	c.MaxConns = 1
	// Pinging an idle connection on acquire would add round trips.
	c.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	dial := c.ConnConfig.DialFunc
	c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &wireConn{Conn: conn, w: w, wake: make(chan struct{})}, nil
	}
}

// requireNoneAcquired fails unless every connection of pool comes back.
// One may be acquired for an instant after the call under test returned:
// the store's background warm-up of idle connections, which any warm-up
// starts, acquires each idle connection to look at it. A leaked connection
// never comes back.
func requireNoneAcquired(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	require.Eventually(t, func() bool { return pool.Stat().AcquiredConns() == 0 },
		10*time.Second, time.Millisecond, "a connection was never given back")
}

// backends returns the server process ids of all pool's connections, taken
// at a moment when every one of them is idle. An acquired connection comes
// back on its own: a caller's, or one the store's background warm-up holds
// for an instant after every warm-up (so a count of acquired connections
// that reads 0 proves nothing a moment later).
func backends(t *testing.T, pool *pgxpool.Pool) []uint32 {
	t.Helper()
	var pids []uint32
	require.Eventually(t, func() bool {
		conns := pool.AcquireAllIdle(context.Background())
		defer func() {
			for _, c := range conns {
				c.Release()
			}
		}()
		if int(pool.Stat().TotalConns()) != len(conns) {
			return false
		}
		pids = make([]uint32, len(conns))
		for i, c := range conns {
			pids[i] = c.Conn().PgConn().PID()
		}
		return true
	}, 10*time.Second, time.Millisecond, "a connection was never given back")
	return pids
}
