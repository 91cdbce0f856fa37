package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
)

// TestCloseWaitsForCallsThatFoundTheStoreOpen: a call that had found the
// store open, but had not yet started a goroutine or taken a connection
// when Close began (here: one waiting for the pool's only connection),
// was not counted. Close returned at once, and the call then took a
// connection of the host's pool, and an admission with a deadline started
// its work goroutine, after Close had returned: a host that closed its
// pool or looked for leaked goroutines then met them. Every call that
// passed its checks is now counted until it returns, and Close waits for
// it; the call finishes as calls in flight do.
//
// It does not run in parallel: goleak compares against the goroutines of
// the moment.
func TestCloseWaitsForCallsThatFoundTheStoreOpen(t *testing.T) {
	calls := []struct {
		name string
		call func(ctx context.Context, f *fixture, store *postgres.Store) error
	}{
		{"admission", func(ctx context.Context, f *fixture, store *postgres.Store) error {
			d, err := store.AdmitCheck(ctx, f.check(policy(t, "close.inflight", 5, time.Hour), "waiting"))
			if err == nil && d.Outcome() != domain.Allowed {
				t.Errorf("the admission in flight was denied: %v", d)
			}
			return err
		}},
		{"cleanup", func(ctx context.Context, _ *fixture, store *postgres.Store) error {
			_, err := store.CleanupExpired(ctx, 10)
			return err
		}},
		{"stats", func(ctx context.Context, _ *fixture, store *postgres.Store) error {
			_, err := store.Stats(ctx)
			return err
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t, postgres.Config{})
			before := goleak.IgnoreCurrent()
			store, pool := f.newStore(t, postgres.Config{AcquireTimeout: time.Minute}, func(c *pgxpool.Config) { c.MaxConns = 1 })
			defer pool.Close()
			conn, err := pool.Acquire(context.Background())
			require.NoError(t, err)
			released := false
			defer func() {
				if !released {
					conn.Release()
				}
			}()

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			answered := make(chan error, 1)
			go func() { answered <- tc.call(ctx, f, store) }()
			waitFor(t, "the call to be counted", func() bool { n, _ := store.Pending(); return n == 1 })

			closed := make(chan error, 1)
			go func() { closed <- store.Close() }()
			waitFor(t, "Close to begin", func() bool { _, closing := store.Pending(); return closing })
			select {
			case err := <-closed:
				t.Fatalf("Close returned (%v) while a call waited for a connection", err)
			default:
			}

			conn.Release()
			released = true
			require.NoError(t, testkit.Receive(t, answered, failSafe, "the call's answer"))
			require.NoError(t, testkit.Receive(t, closed, failSafe, "Close"))
			require.Zero(t, pool.Stat().AcquiredConns(), "Close returned while the store held a connection")
			_, err = store.AdmitCheck(ctx, f.check(policy(t, "close.inflight", 5, time.Hour), "after"))
			require.ErrorIs(t, err, postgres.ErrClosed)
			pool.Close()
			goleak.VerifyNone(t, before)
		})
	}
}

// waitFor polls cond until it holds, and fails t if it never does within
// failSafe.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(failSafe); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s", what)
		}
	}
}
