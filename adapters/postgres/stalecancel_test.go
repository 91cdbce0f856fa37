package postgres_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
)

// cancelTrap stands between a pool and the server for cancel requests: once
// armed, the next connection the pool's driver dials is a cancel request's,
// and the trap keeps its packet without passing it on or answering, as a
// server too slow to acknowledge it does. The packet can be delivered later,
// when it is a cancel request the server gets late.
type cancelTrap struct {
	armed  atomic.Bool
	packet chan []byte
}

func newCancelTrap() *cancelTrap { return &cancelTrap{packet: make(chan []byte, 1)} }

func (ct *cancelTrap) install(c *pgxpool.Config) {
	dial := c.ConnConfig.DialFunc
	c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !ct.armed.CompareAndSwap(true, false) {
			return dial(ctx, network, addr)
		}
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			var size [4]byte
			if _, err := io.ReadFull(server, size[:]); err != nil {
				return
			}
			packet := make([]byte, binary.BigEndian.Uint32(size[:]))
			copy(packet, size[:])
			if _, err := io.ReadFull(server, packet[4:]); err != nil {
				return
			}
			ct.packet <- packet
			// No acknowledgement: the client gives up reading when its
			// context ends, and closes its end.
			_, _ = io.Copy(io.Discard, server)
		}()
		return client, nil
	}
}

// deliver sends a trapped cancel request to the server the pool connects
// to, and waits for the server to have handled it: the server closes the
// connection once it has signalled the backend the request names.
func deliver(t *testing.T, pool *pgxpool.Pool, packet []byte) {
	t.Helper()
	cc := pool.Config().ConnConfig
	conn, err := cc.DialFunc(context.Background(), "tcp", net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Write(packet)
	require.NoError(t, err)
	_, err = conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the server closes a cancel request's connection once it is handled")
}

// A cancel request the server has not acknowledged within the store's
// budget may still reach it later, and cancel whatever the connection runs
// then: another caller's admission, which had no deadline and failed with
// 57014. The driver reports such a request as sent (it ignores the failed
// read of the acknowledgement), so the store must not keep the connection.
//
// Here the caller leaves while its admission waits for a table lock, the
// cancel request is held back unanswered, and the lock is let go so that
// the round trip ends on its own. The request then reaches the server while
// the next admission waits for the lock again: that admission must not be
// the one cancelled.
func TestAnUnacknowledgedCancelRequestCannotCancelALaterAdmission(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		app := "stale-cancel-" + e.name
		trap := newCancelTrap()
		store, pool := f.newStore(t, e.cfg(postgres.Config{OperationTimeout: 30 * time.Second}), func(c *pgxpool.Config) {
			named(app)(c)
			c.MaxConns = 1
			trap.install(c)
		})
		checks := e.checks(f, policy(t, "stale.cancel", 5, time.Hour), "c")
		e.allow(t, store, checks)

		// The first caller leaves while its admission waits for the lock;
		// the store's cancel request is trapped.
		tx := f.hold(t)
		lockTable(t, tx)
		trap.armed.Store(true)
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() {
			_, err := e.admit(ctx, store, checks)
			first <- err
		}()
		require.Eventually(t, func() bool { return f.waitsForLock(app) }, 10*time.Second, time.Millisecond)
		cancel()

		var packet []byte
		select {
		case packet = <-trap.packet:
		case <-time.After(10 * time.Second):
			t.Fatal("the store sent no cancel request for the round trip its caller left")
		}
		// The round trip ends on its own, as if the cancel request had come
		// too late for it.
		require.NoError(t, tx.Rollback(context.Background()))
		require.ErrorIs(t, <-first, context.Canceled)
		requireNoneAcquired(t, pool)

		// The next admission waits for the lock when the request arrives.
		tx = f.hold(t)
		lockTable(t, tx)
		second := make(chan error, 1)
		go func() {
			_, err := e.admit(context.Background(), store, checks)
			second <- err
		}()
		require.Eventually(t, func() bool { return f.waitsForLock(app) }, 10*time.Second, time.Millisecond)
		deliver(t, pool, packet)
		require.NoError(t, tx.Rollback(context.Background()))
		err := <-second
		var ae *postgres.AdmissionError
		if errors.As(err, &ae) {
			t.Fatalf("an admission with no deadline failed at %s: %v", ae.Op, err)
		}
		require.NoError(t, err)
		f.requireUsed(t, checks, 2)
	})
}
