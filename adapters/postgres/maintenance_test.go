package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/ports"
)

// maintenanceOps are the store's maintenance entry points: cleanup, Ready
// and TableStats (what the runlimit status command reads). Each waits, in
// the test below, for the counters table that the test holds locked:
// cleanup's deletion, Ready's warm-up of a connection the store has not
// used, and TableStats' size of the table.
var maintenanceOps = []struct {
	name string
	run  func(ctx context.Context, s *postgres.Store) error
}{
	{"cleanup", func(ctx context.Context, s *postgres.Store) error {
		_, err := s.CleanupExpired(ctx, 10)
		return err
	}},
	{"ready", func(ctx context.Context, s *postgres.Store) error { return s.Ready(ctx) }},
	{"table stats", func(ctx context.Context, s *postgres.Store) error {
		_, err := s.TableStats(ctx)
		return err
	}},
}

// requireMaintenanceFailed requires err to be a *MaintenanceError that
// consumed nothing and says whether rows may have been removed.
func requireMaintenanceFailed(t *testing.T, err error, mayHaveRemoved bool) *postgres.MaintenanceError {
	t.Helper()
	var me *postgres.MaintenanceError
	require.ErrorAs(t, err, &me)
	require.Equal(t, mayHaveRemoved, me.MayHaveRemoved)
	require.False(t, ports.MayHaveConsumedQuota(err))
	return me
}

// Cleanup, Ready and TableStats, waiting for a table lock, answer a caller
// whose deadline is a few milliseconds at that deadline with a timeout,
// and stop waiting then too, keeping their connection rather than holding
// it until their budget ends and then closing it. None removed a row.
// (Whether a cleanup's caller is told that rows may have been removed
// depends on whether its deletion and COMMIT had been sent when the
// deadline struck, which on a loaded machine they may not have been: see
// TestCleanupDeadlineWhileTheDeletionWaitsMayHaveRemoved.) A backend
// killed while one of them waits ends it with an error that removed
// nothing (the server said so before it went), never a hang; the pool
// replaces the connection, and the next call succeeds.
func TestMaintenanceUnderTightDeadlinesAndKilledBackends(t *testing.T) {
	t.Parallel()
	for _, op := range maintenanceOps {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := setup(t, postgres.Config{})
			const app = "maintenance"
			c := f.check(policy(t, "maintenance", 5, time.Minute), "c")
			requireAllowed(t, admit(t, f.store, c))
			shift(t, f.db.Pool, time.Hour)
			// A fresh pool for each call: Ready's connection is cold then. The
			// budget is long: a wait that ends must have ended by the
			// caller's deadline, the server's timeout set from it, or the
			// cancel request sent when the caller left.
			fresh := func() *postgres.Store {
				store, pool := f.newStore(t, postgres.Config{OperationTimeout: 30 * time.Second}, named(app))
				require.NoError(t, pool.Ping(ctx))
				return store
			}

			// A deadline of a few milliseconds.
			store := fresh()
			before := f.appBackends(t, app)
			tx := f.hold(t)
			lockTable(t, tx)
			short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
			err := op.run(short, store)
			cancel()
			var me *postgres.MaintenanceError
			require.ErrorAs(t, err, &me)
			if op.name != "cleanup" {
				require.False(t, me.MayHaveRemoved)
			}
			require.False(t, ports.MayHaveConsumedQuota(err))
			require.True(t, me.Timeout)
			require.ErrorIs(t, err, postgres.ErrTimeout)
			require.Eventually(t, func() bool { return !f.waitsForLock(app) }, 10*time.Second, time.Millisecond)
			require.Equal(t, before, f.appBackends(t, app), "the connection was replaced")
			require.NoError(t, tx.Rollback(ctx))
			_, ok := f.stored(t, c)
			require.True(t, ok, "a cleanup that timed out removed the row")

			// A backend killed mid-call.
			store = fresh()
			tx = f.hold(t)
			lockTable(t, tx)
			answer := make(chan error, 1)
			go func() { answer <- op.run(ctx, store) }()
			f.waitForLockWait(t, app)
			var killed bool
			require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT bool_and(pg_catalog.pg_terminate_backend(pid))
				FROM pg_catalog.pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&killed))
			require.True(t, killed)
			err = <-answer
			requireMaintenanceFailed(t, err, false)
			require.False(t, errors.Is(err, postgres.ErrTimeout), "the call ended when its backend did, not by a timeout")
			require.NoError(t, tx.Rollback(ctx))
			_, ok = f.stored(t, c)
			require.True(t, ok, "a cleanup whose backend was killed removed the row")
			require.NoError(t, op.run(ctx, store))
		})
	}
}

// A cleanup whose caller's deadline strikes while its deletion waits for a
// table lock, COMMIT sent behind it, cannot know whether the deletion will
// commit, and says that rows may have been removed; none were, and the
// connection is kept. The deadline strikes once the wait is seen, not
// after a fixed time, so that the deletion has been sent whatever the
// machine's speed; it is far away until then, so that the server's lock
// timeout, set from it, does not end the wait first.
func TestCleanupDeadlineWhileTheDeletionWaitsMayHaveRemoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, postgres.Config{})
	const app = "cleanup-deadline"
	c := f.check(policy(t, "cleanup.deadline", 5, time.Minute), "c")
	requireAllowed(t, admit(t, f.store, c))
	shift(t, f.db.Pool, time.Hour)
	store, pool := f.newStore(t, postgres.Config{OperationTimeout: 30 * time.Second}, named(app))
	require.NoError(t, pool.Ping(ctx))
	before := f.appBackends(t, app)

	tx := f.hold(t)
	lockTable(t, tx)
	deadline := newStrikingDeadline(time.Hour)
	answer := make(chan error, 1)
	go func() {
		_, err := store.CleanupExpired(deadline, 10)
		answer <- err
	}()
	f.waitForLockWait(t, app)
	deadline.strike()
	err := <-answer
	me := requireMaintenanceFailed(t, err, true)
	require.True(t, me.Timeout)
	require.ErrorIs(t, err, postgres.ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// The store cancelled the deletion on the server.
	require.Eventually(t, func() bool { return !f.waitsForLock(app) }, 10*time.Second, time.Millisecond)
	require.Equal(t, before, f.appBackends(t, app), "the connection was replaced")
	require.NoError(t, tx.Rollback(ctx))
	_, ok := f.stored(t, c)
	require.True(t, ok, "the cancelled deletion removed the row")
	removed, err := store.CleanupExpired(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, removed)
}

// strikingDeadline is a context whose deadline strikes when the test says
// so: until then its Deadline is far away; once strike is called it is
// done with context.DeadlineExceeded, as a context whose deadline has
// passed is.
type strikingDeadline struct {
	context.Context
	deadline time.Time
	done     chan struct{}
	once     sync.Once
	awaited  bool
}

func newStrikingDeadline(far time.Duration) *strikingDeadline {
	return &strikingDeadline{Context: context.Background(), deadline: time.Now().Add(far), done: make(chan struct{})}
}

// newDeadlineStrikingWhenAwaited returns a deadline that strikes the
// first time anything waits on it (asks for Done), as a caller's deadline
// of a moment does when the store starts waiting, however slow the
// machine: the store checks Err before any work, and first waits on the
// context for a connection. A deadline of 1 ms could strike before that
// check, on a loaded machine, and the caller left before the wait the
// test meant to cut short.
func newDeadlineStrikingWhenAwaited() *strikingDeadline {
	c := newStrikingDeadline(time.Hour)
	c.awaited = true
	return c
}

func (c *strikingDeadline) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *strikingDeadline) Done() <-chan struct{} {
	if c.awaited {
		c.strike()
	}
	return c.done
}

func (c *strikingDeadline) Err() error { return passedOnceDone(c.done) }

// passedOnceDone is the Err of a test's deadline that is done once done
// is closed: context.DeadlineExceeded from then on, nil before.
func passedOnceDone(done <-chan struct{}) error {
	select {
	case <-done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// strike makes the deadline pass.
func (c *strikingDeadline) strike() { c.once.Do(func() { close(c.done) }) }

// lookedAtDeadline is a caller's deadline d away from the moment the
// store first asks for it (Deadline), not from the moment the test made
// it: the store reads it when it starts waiting for a connection, and
// sets the server's timeouts from it. A deadline counted from before the
// call could pass, on a loaded machine, before the store had begun, and
// the call then ended at its first Err check instead of at the step under
// test. Until the store has asked, it is not done.
type lookedAtDeadline struct {
	context.Context
	d    time.Duration
	once sync.Once
	at   time.Time
	done chan struct{}
}

func newLookedAtDeadline(d time.Duration) *lookedAtDeadline {
	return &lookedAtDeadline{Context: context.Background(), d: d, done: make(chan struct{})}
}

func (c *lookedAtDeadline) Deadline() (time.Time, bool) {
	c.once.Do(func() {
		c.at = time.Now().Add(c.d)
		time.AfterFunc(c.d, func() { close(c.done) })
	})
	return c.at, true
}

func (c *lookedAtDeadline) Done() <-chan struct{} { return c.done }

func (c *lookedAtDeadline) Err() error { return passedOnceDone(c.done) }

// appBackends returns the server process ids of the sessions of
// application app, in order.
func (f *fixture) appBackends(t *testing.T, app string) []int32 {
	t.Helper()
	var pids []int32
	require.NoError(t, f.db.Pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(pid ORDER BY pid), '{}')
		FROM pg_catalog.pg_stat_activity WHERE datname = current_database() AND application_name = $1`, app).Scan(&pids))
	return pids
}
