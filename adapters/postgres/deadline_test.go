package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
)

// A caller whose deadline strikes while a round trip's answer is held up in
// the network gets its answer at once: a timeout that consumed nothing if
// COMMIT was never sent, and that may have consumed once it was. The
// connection is not closed: the store lets the round trip finish under its
// own budget, rolls back what is left and pools the connection, and the
// same server process serves the next check.
//
// The deadline strikes once the held round trip is in flight, as a
// caller's deadline that ends during it does, not after a fixed time: on
// a loaded machine the round trips before it could take longer than any
// fixed deadline, which then struck before the held one was sent.
func TestCallerDeadlineKeepsTheConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []callerDeadlineCase{
		{"single/round trip 1", 1, postgres.OpLock, false, false, postgres.Locked},
		{"single/round trip 2", 2, postgres.OpCommit, true, false, postgres.Locked},
		{"batch of two/round trip 1", 1, postgres.OpLock, false, true, postgres.Locked},
		{"batch of two/round trip 2", 2, postgres.OpCommit, true, true, postgres.Locked},
		// The optimistic protocol's round trip 1 is its read, and round
		// trip 2 its conditional write, which commits at the Sync.
		{"optimistic single/round trip 1", 1, postgres.OpLock, false, false, postgres.Optimistic},
		{"optimistic single/round trip 2", 2, postgres.OpCommit, true, false, postgres.Optimistic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, setup(t, postgres.Config{Protocol: tc.protocol}))
		})
	}
}

type callerDeadlineCase struct {
	name     string
	trip     int64 // 1: the locks and reads; 2: the writes and COMMIT
	op       string
	consumed bool
	batch    bool
	protocol postgres.Protocol
}

// run is TestCallerDeadlineKeepsTheConnection on a wired store of its own.
func (tc callerDeadlineCase) run(t *testing.T, f *fixture) {
	t.Helper()
	cfg := postgres.Config{Protocol: tc.protocol}
	store, pool, w := f.newWiredStore(t, cfg)
	p := policy(t, "deadline", 10, time.Hour)
	checks := []domain.Check{f.check(p, "a")}
	if tc.batch {
		checks = append(checks, f.check(p, "b"))
	}
	admitAll := func(ctx context.Context) error {
		if tc.batch {
			_, err := tryAdmit(ctx, store, checks...)
			return err
		}
		_, err := store.AdmitCheck(ctx, checks[0])
		return err
	}
	require.NoError(t, admitAll(context.Background()))
	before := backends(t, pool)
	require.Len(t, before, 1)

	held, let := w.holdNext(tc.trip)
	var letOnce sync.Once
	release := func() { letOnce.Do(let) }
	defer release()
	ctx := newStrikingDeadline(time.Hour)
	errs := make(chan error, 1)
	go func() { errs <- admitAll(ctx) }()
	testkit.Receive(t, held, 10*time.Second, fmt.Sprintf("round trip %d", tc.trip))
	ctx.strike()
	// The answer is still held back: the caller must not wait for it.
	var err error
	select {
	case err = <-errs:
	case <-time.After(10 * time.Second):
		release()
		t.Fatal("the caller waited for the network instead of leaving at its deadline")
	}
	// The store asks the server to cancel what it is still waiting
	// for; the answer then arrives.
	require.Eventually(t, func() bool { return w.cancels.Load() > 0 }, 10*time.Second, time.Millisecond,
		"the statement was not cancelled on the server")
	release()
	ce := requireAdmissionError(t, err, tc.op, tc.consumed)
	require.True(t, ce.Timeout)
	require.ErrorIs(t, err, postgres.ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	require.Equal(t, before, backends(t, pool), "the connection was replaced")
	got, ok := f.stored(t, checks[0])
	require.True(t, ok)
	want := int64(1)
	if tc.trip == 2 {
		want = 2 // the server received and ran the COMMIT
	}
	require.Equal(t, want, got.Used)
	require.NoError(t, admitAll(context.Background()))
	require.Equal(t, before, backends(t, pool))
}

// A caller that cancels while its admission waits for a lock gets its
// answer (at once when its context has a deadline, once the server has
// stopped otherwise); the store cancels the wait on the server, rolls back
// and pools the connection while the lock is still held elsewhere, and
// nothing is left behind.
func TestCallerCancellationCancelsTheStatement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		batch    bool
		deadline bool
		protocol postgres.Protocol
		op       string
		consumed bool
	}{
		{"single", false, false, postgres.Locked, postgres.OpLock, false},
		{"batch of two", true, false, postgres.Locked, postgres.OpLock, false},
		{"single, deadline far away", false, true, postgres.Locked, postgres.OpLock, false},
		{"batch of two, deadline far away", true, true, postgres.Locked, postgres.OpLock, false},
		// The optimistic protocol meets the lock in its conditional write.
		// A caller who waits for the work's end learns that the server
		// cancelled the write; one with a deadline leaves at once, while
		// the write's outcome is still unknown to the store.
		{"optimistic single", false, false, postgres.Optimistic, postgres.OpWrite, false},
		{"optimistic single, deadline far away", false, true, postgres.Optimistic, postgres.OpCommit, true},
	} {
		batch := tc.batch
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := postgres.Config{Protocol: tc.protocol}
			f := setup(t, cfg)
			store, pool := f.newStore(t, cfg, named("cancelled"))
			p := policy(t, "cancel", 5, time.Hour)
			c, other := f.check(p, "c"), f.check(p, "other")
			requireAllowed(t, admit(t, store, other))
			before := backends(t, pool)

			tx := f.hold(t)
			lockAdvisory(t, tx, c)
			ctx, cancel := context.WithCancel(context.Background())
			if tc.deadline {
				ctx, cancel = context.WithTimeout(context.Background(), time.Hour)
			}
			errs := make(chan error, 1)
			go func() {
				var err error
				if batch {
					_, err = tryAdmit(ctx, store, c, other)
				} else {
					_, err = store.AdmitCheck(ctx, c)
				}
				errs <- err
			}()
			f.waitForLockWait(t, "cancelled")
			cancel()
			err := <-errs
			ce := requireAdmissionError(t, err, tc.op, tc.consumed)
			require.False(t, ce.Timeout)
			require.ErrorIs(t, err, context.Canceled)

			// The lock is still held, yet the connection comes back: the
			// wait was cancelled on the server.
			require.Equal(t, before, backends(t, pool))
			require.NoError(t, tx.Commit(context.Background()))
			_, ok := f.stored(t, c)
			require.False(t, ok)
			got, _ := f.stored(t, other)
			require.Equal(t, int64(1), got.Used)
			require.Zero(t, f.ledger(t, postgres.ShardOf(c.CounterKey())))
			requireAllowed(t, admit(t, store, c))
			require.Equal(t, before, backends(t, pool))
		})
	}
}
