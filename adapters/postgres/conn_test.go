package postgres_test

import (
	"context"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/postgres"
)

// wire watches the connections of a pool: it counts network round trips
// (each turn from writing to reading is one request waiting for its
// answer) and can stall reads from a given round trip on, as a network
// partition would, until the client gives up and sets a deadline.
type wire struct {
	trips     atomic.Int64
	stallFrom atomic.Int64 // 0: never stall
}

// stallNext makes the round trip after next-1 more ones, and every later
// one, hang.
func (w *wire) stallNext(next int64) { w.stallFrom.Store(w.trips.Load() + next) }

type wireConn struct {
	net.Conn
	w       *wire
	writing atomic.Bool

	mu   sync.Mutex
	wake chan struct{} // closed when a deadline in the past is set
}

func (c *wireConn) Write(b []byte) (int, error) {
	c.writing.Store(true)
	return c.Conn.Write(b)
}

func (c *wireConn) Read(b []byte) (int, error) {
	trip := c.w.trips.Load()
	if c.writing.Swap(false) {
		trip = c.w.trips.Add(1)
	}
	if from := c.w.stallFrom.Load(); from > 0 && trip >= from {
		c.mu.Lock()
		wake := c.wake
		c.mu.Unlock()
		<-wake
		return 0, os.ErrDeadlineExceeded
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
	w := new(wire)
	store, pool := f.newStore(t, cfg, func(c *pgxpool.Config) {
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
	})
	return store, pool, w
}
