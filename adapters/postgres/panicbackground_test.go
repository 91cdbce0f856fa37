package postgres_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/internal/testkit"
)

// callerMark marks the contexts of the test's own calls, which the
// panicking acquire tracer lets through.
type callerMark struct{}

// panickingAcquireTracer is a host's tracer of the pool whose
// TraceAcquireStart panics, while armed, for an acquisition whose context
// is not the test's: one the store makes for no caller.
type panickingAcquireTracer struct{ armed *atomic.Bool }

func (tr panickingAcquireTracer) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	if ctx.Value(callerMark{}) == nil && tr.armed.CompareAndSwap(true, false) {
		panic(errHostPanic{})
	}
	return ctx
}

func (panickingAcquireTracer) TraceAcquireEnd(context.Context, *pgxpool.Pool, pgxpool.TraceAcquireEndData) {
}

func (panickingAcquireTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (panickingAcquireTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestAPanicOfTheHostsTracerAsTheWarmUpWaitsForAConnectionIsContained: a
// caller who gives up waiting for a connection leaves the store waiting
// for one on a goroutine of its own, to warm it for the next caller; the
// pool runs the host's acquire tracer there. Only a panic on the
// connection being warmed was contained: one of the pool's hooks as the
// warm-up acquired, or gave back, a connection ended the host's process
// (here the test binary). The warm-up now ends there and the store serves
// on.
func TestAPanicOfTheHostsTracerAsTheWarmUpWaitsForAConnectionIsContained(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	var armed atomic.Bool
	store, pool := f.newStore(t, postgres.Config{}, func(c *pgxpool.Config) {
		c.MaxConns = 1
		c.ConnConfig.Tracer = panickingAcquireTracer{armed: &armed}
	})
	marked := context.WithValue(context.Background(), callerMark{}, true)
	conn, err := pool.Acquire(marked)
	require.NoError(t, err)
	armed.Store(true)
	ctx := newDeadlineStrikingWhenAwaited()
	ctx.Context = marked
	c := f.check(policy(t, "host.panic", 5, time.Hour), "tracer")
	_, err = store.AdmitCheck(ctx, c)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Eventually(t, func() bool { return !armed.Load() }, failSafe, time.Millisecond,
		"the warm-up never waited for a connection")
	conn.Release()
	requireAllowed(t, admit(t, store, c))
	requireNoneAcquired(t, pool)
	require.NoError(t, store.Close())
}

// TestAPanicOfTheHostsDialFuncAsTheStoreCancelsAStatementIsContained: the
// store cancels the statement of a caller who left on a connection of
// its own, which the host's DialFunc makes, on a goroutine of the
// store's. A panic there ended the host's process (here the test
// binary); the request now counts as unacknowledged: the connection, its
// state unknown, is closed, the caller gets its context's error, and the
// store serves on.
func TestAPanicOfTheHostsDialFuncAsTheStoreCancelsAStatementIsContained(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	var armed atomic.Bool
	store, pool, w := f.newWiredStoreWith(t, postgres.Config{}, func(c *pgxpool.Config) {
		dial := c.ConnConfig.DialFunc
		c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if armed.CompareAndSwap(true, false) {
				panic(errHostPanic{})
			}
			return dial(ctx, network, addr)
		}
	})
	c := f.check(policy(t, "host.panic", 5, time.Hour), "cancel")
	requireAllowed(t, admit(t, store, c)) // warms the connection
	held, let := w.holdNext(1)
	var letOnce sync.Once
	defer letOnce.Do(let)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 1)
	go func() {
		_, err := store.AdmitCheck(ctx, c)
		errs <- err
	}()
	testkit.Receive(t, held, failSafe, "round trip 1")
	armed.Store(true)
	cancel()
	err := testkit.Receive(t, errs, failSafe, "the admission to return")
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, armed.Load(), "the store sent no cancel request")
	requireNoneAcquired(t, pool)
	letOnce.Do(let)
	requireAllowed(t, admit(t, store, c))
	require.NoError(t, store.Close())
}
