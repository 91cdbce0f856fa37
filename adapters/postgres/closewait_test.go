package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/internal/testkit"
)

// failSafe bounds how long a test waits for what must happen; reaching
// it fails the test, it is not a measure of speed.
const failSafe = 30 * time.Second

// TestCloseWaitsForTheWorkOfCallersWhoLeft: a caller whose deadline
// strikes mid-admission leaves its work behind, on a goroutine of the
// store's, to roll back and give its connection back. Close used to
// return at once, leaving that goroutine running, holding a connection of
// the host's pool, and a host that closed its pool or looked for leaked
// goroutines (goleak, in its own tests) right after met them. Close now
// waits for it: once Close returns, the store holds no connection and
// runs no goroutine, and a second Close returns too.
//
// The network holds the answer back (see wire), so that the work is
// surely still running when Close is called, and the store's own budget
// ends it: a warm-up of a new connection, which a caller's deadline never
// cuts short, ends with OperationTimeout; a round trip of the protocol
// with the store's cancel request and settleTimeout.
//
// It does not run in parallel: goleak compares against the goroutines of
// the moment.
func TestCloseWaitsForTheWorkOfCallersWhoLeft(t *testing.T) {
	cfg := postgres.Config{OperationTimeout: 300 * time.Millisecond}
	t.Run("warm-up", func(t *testing.T) {
		f := setup(t, postgres.Config{})
		before := goleak.IgnoreCurrent()
		// The warm-up must send its round trip within the budget, which
		// a loaded machine can delay: a budget of a second leaves room
		// for that, and is the time Close then waits.
		store, pool, w := f.newWiredStore(t, postgres.Config{OperationTimeout: time.Second})
		// A connection the store has not warmed.
		conn, err := pool.Acquire(context.Background())
		require.NoError(t, err)
		conn.Release()
		held, let := w.holdNext(1)
		var letOnce sync.Once
		defer letOnce.Do(let)
		// The deadline strikes once the warm-up's round trip is held, not
		// after a fixed time, which could pass before it was sent.
		deadline := newStrikingDeadline(time.Hour)
		answer := make(chan error, 1)
		go func() {
			_, err := store.AdmitCheck(deadline, f.check(policy(t, "close.wait", 5, time.Hour), "warm-up"))
			answer <- err
		}()
		testkit.Receive(t, held, failSafe, "the warm-up's round trip")
		deadline.strike()
		require.ErrorIs(t, testkit.Receive(t, answer, failSafe, "the caller's answer"), context.DeadlineExceeded)

		require.NoError(t, store.Close())
		require.Zero(t, pool.Stat().AcquiredConns(), "Close returned while the store's work held a connection")
		require.NoError(t, store.Close())
		letOnce.Do(let)
		pool.Close()
		goleak.VerifyNone(t, before)
	})
	t.Run("round trip 1", func(t *testing.T) {
		f := setup(t, postgres.Config{})
		before := goleak.IgnoreCurrent()
		closeAfterLeavingRoundTrip1(t, f, cfg)
		goleak.VerifyNone(t, before)
	})
}

// closeAfterLeavingRoundTrip1 is the round trip 1 case on a wired store of
// its own, which it closes with its pool. The caller's deadline strikes
// once round trip 1 is held, not after a fixed time, which on a loaded
// machine could pass before round trip 1 was sent.
func closeAfterLeavingRoundTrip1(t *testing.T, f *fixture, cfg postgres.Config) {
	t.Helper()
	store, pool, w := f.newWiredStore(t, cfg)
	defer pool.Close()
	c := f.check(policy(t, "close.wait", 5, time.Hour), "round trip 1")
	// The connection is warmed under the default budget, which the
	// store's 300 ms on a loaded machine may not cover.
	warmFor(t, store, pool)
	held, let := w.holdNext(1)
	var letOnce sync.Once
	defer letOnce.Do(let)
	deadline := newStrikingDeadline(time.Hour)
	answer := make(chan error, 1)
	go func() {
		_, err := store.AdmitCheck(deadline, c)
		answer <- err
	}()
	testkit.Receive(t, held, failSafe, "round trip 1")
	deadline.strike()
	require.ErrorIs(t, testkit.Receive(t, answer, failSafe, "the caller's answer"), context.DeadlineExceeded)

	require.NoError(t, store.Close())
	require.Zero(t, pool.Stat().AcquiredConns(), "Close returned while the store's work held a connection")
	require.NoError(t, store.Close())
}

// TestCloseEndsTheWaitForAConnectionToWarm: a caller who gives up waiting
// for a connection leaves the store waiting, within AcquireTimeout, for
// the connection the pool may be opening for it, to warm it up for the
// next caller. Close used to leave that goroutine waiting; it now ends
// the wait, which serves only later callers, and returns with nothing of
// the store running, while every connection of the pool is still in use.
//
// It does not run in parallel: goleak compares against the goroutines of
// the moment.
func TestCloseEndsTheWaitForAConnectionToWarm(t *testing.T) {
	f := setup(t, postgres.Config{})
	store, pool := f.newStore(t, postgres.Config{AcquireTimeout: time.Minute}, func(c *pgxpool.Config) { c.MaxConns = 1 })
	conn, err := pool.Acquire(context.Background())
	require.NoError(t, err)
	defer conn.Release()
	before := goleak.IgnoreCurrent()
	_, err = store.AdmitCheck(newDeadlineStrikingWhenAwaited(), f.check(policy(t, "close.wait", 5, time.Hour), "no connection"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, store.Close())
	goleak.VerifyNone(t, before)
}
