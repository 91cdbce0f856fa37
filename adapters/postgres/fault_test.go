package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/ports"
)

// entry is one of the ways into the store's admission flow. Every fault
// test takes each: a single check (AdmitCheck), a batch of two (Admit)
// whose second check has a key of its own, and a single check on a store
// whose single checks take the optimistic protocol.
type entry struct {
	name     string
	batch    bool
	protocol postgres.Protocol
}

var entries = []entry{
	{"single check", false, postgres.Locked},
	{"batch of two", true, postgres.Locked},
	{"optimistic single check", false, postgres.Optimistic},
}

// cfg returns c with the entry's protocol: every store a fault test makes
// is made from it.
func (e entry) cfg(c postgres.Config) postgres.Config {
	c.Protocol = e.protocol
	return c
}

func (e entry) optimistic() bool { return e.protocol == postgres.Optimistic }

// eachEntry runs test once per entry point, in parallel subtests.
func eachEntry(t *testing.T, test func(t *testing.T, e entry)) {
	t.Helper()
	for _, e := range entries {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			test(t, e)
		})
	}
}

// checks returns the checks of one admission for subject under p: its
// check alone, or with a companion of its own key.
func (e entry) checks(f *fixture, p domain.Policy, subject string) []domain.Check {
	cs := []domain.Check{f.check(p, subject)}
	if e.batch {
		cs = append(cs, f.check(p, subject+"/companion"))
	}
	return cs
}

// verdict is what an admission decided, on either entry point.
type verdict struct {
	outcome domain.Outcome
	index   int // the failing check's index, when denied
	reason  domain.DenialReason
}

// admitWithin runs one admission of checks through the entry point under a
// caller deadline of d from when the store first asks for it (see
// lookedAtDeadline), or with no deadline when d is 0, and returns its
// error.
func (e entry) admitWithin(s *postgres.Store, checks []domain.Check, d time.Duration) error {
	var ctx context.Context = context.Background()
	if d > 0 {
		ctx = newLookedAtDeadline(d)
	}
	_, err := e.admit(ctx, s, checks)
	return err
}

// admit runs one admission of checks through the entry point; it is safe
// to call from any goroutine.
func (e entry) admit(ctx context.Context, s *postgres.Store, checks []domain.Check) (verdict, error) {
	if !e.batch {
		d, err := s.AdmitCheck(ctx, checks[0])
		if err != nil {
			return verdict{}, err
		}
		r := verdict{outcome: d.Outcome()}
		if denial, ok := d.Denial(); ok {
			r.reason = denial.Reason()
		}
		return r, nil
	}
	d, err := tryAdmit(ctx, s, checks...)
	if err != nil {
		return verdict{}, err
	}
	r := verdict{outcome: d.Outcome()}
	if i, denial, ok := d.Denied(); ok {
		r.index, r.reason = i, denial.Reason()
	}
	return r, nil
}

// allow admits checks through the entry point and requires them allowed.
func (e entry) allow(t *testing.T, s *postgres.Store, checks []domain.Check) {
	t.Helper()
	r, err := e.admit(context.Background(), s, checks)
	require.NoError(t, err)
	require.Equal(t, domain.Allowed, r.outcome)
}

// allowOnNewConnection requires s to allow checks on a connection it must
// open and make ready first. Making a connection ready is the step whose
// time is the machine's, not the store's (a new server process, its
// statements prepared): under the one-second budget of these tests a
// loaded machine can miss it, which fails that admission with an acquire
// timeout that consumed nothing. Such an attempt is made again, up to
// four more times; any other failure fails at once, and a store that can
// never make a connection ready fails on the last attempt.
func (e entry) allowOnNewConnection(t *testing.T, s *postgres.Store, checks []domain.Check) {
	t.Helper()
	for try := 1; ; try++ {
		r, err := e.admit(context.Background(), s, checks)
		var ae *postgres.AdmissionError
		if try < 5 && errors.As(err, &ae) && ae.Op == postgres.OpAcquire && ae.Timeout && !ae.MayHaveConsumed {
			t.Logf("attempt %d: making a new connection ready outlasted the budget: %v", try, err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, domain.Allowed, r.outcome)
		return
	}
}

// requireUsed requires every check's stored counter to hold used units.
func (f *fixture) requireUsed(t *testing.T, checks []domain.Check, used int64) {
	t.Helper()
	for i, c := range checks {
		got, ok := f.stored(t, c)
		require.True(t, ok, "check %d has no row", i)
		require.Equal(t, used, got.Used, "check %d", i)
	}
}

// requireAbsent requires that no check has a row.
func (f *fixture) requireAbsent(t *testing.T, checks []domain.Check) {
	t.Helper()
	for i, c := range checks {
		_, ok := f.stored(t, c)
		require.False(t, ok, "check %d has a row", i)
	}
}

// requireAdmissionError asserts err is an *AdmissionError at step op that
// says whether quota may have been consumed, through the port's predicate
// too.
func requireAdmissionError(t *testing.T, err error, op string, mayHaveConsumed bool) *postgres.AdmissionError {
	t.Helper()
	var ae *postgres.AdmissionError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, op, ae.Op)
	require.Equal(t, mayHaveConsumed, ae.MayHaveConsumed)
	require.Equal(t, mayHaveConsumed, ports.MayHaveConsumedQuota(err))
	return ae
}

// hold begins a transaction on the fixture's own pool that the test ends.
func (f *fixture) hold(t *testing.T) pgx.Tx {
	t.Helper()
	tx, err := f.db.Pool.Begin(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

func lockRow(t *testing.T, tx pgx.Tx, c domain.Check) {
	t.Helper()
	k := c.CounterKey().Bytes()
	tag, err := tx.Exec(context.Background(), `SELECT FROM runlimit_fixed_windows
		WHERE config_fingerprint = $1 AND subject_key = $2 FOR UPDATE`, k[:32], k[32:])
	require.NoError(t, err)
	require.Equal(t, int64(1), tag.RowsAffected())
}

func lockAdvisory(t *testing.T, tx pgx.Tx, c domain.Check) {
	t.Helper()
	_, err := tx.Exec(context.Background(), "SELECT pg_catalog.pg_advisory_xact_lock($1)", postgres.AdvisoryLockID(c.CounterKey()))
	require.NoError(t, err)
}

// waitForLockWait waits until a session of application app is waiting for
// a lock: the admission under test has queued behind the test's lock.
func (f *fixture) waitForLockWait(t *testing.T, app string) {
	t.Helper()
	require.Eventually(t, func() bool { return f.waitsForLock(app) }, 10*time.Second, 5*time.Millisecond)
}

// waitsForLock reports whether a session of application app is waiting for
// a lock.
func (f *fixture) waitsForLock(app string) bool {
	var waiting int
	err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&waiting)
	return err == nil && waiting == 1
}

func named(app string) func(*pgxpool.Config) {
	return func(c *pgxpool.Config) {
		c.MaxConns = 2
		c.ConnConfig.RuntimeParams["application_name"] = app
	}
}

// A row lock held past the operation timeout fails the admission as
// definitely not consumed, and the connection goes back to the pool or is
// closed, never leaked.
func TestAdmitTimesOutOnAHeldRowLock(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		store, pool := f.newStore(t, e.cfg(postgres.Config{OperationTimeout: time.Second}), named("row-lock"))
		checks := e.checks(f, policy(t, "held", 5, time.Hour), "held")
		e.allow(t, store, checks)

		tx := f.hold(t)
		lockRow(t, tx, checks[0])
		_, err := e.admit(context.Background(), store, checks)
		requireWaitTimedOut(t, e, err, pool)
		require.NoError(t, tx.Rollback(context.Background()))

		f.requireUsed(t, checks, 1)
		e.allow(t, store, checks)
	})
}

// requireWaitTimedOut requires err to be a lock wait that the server's lock
// timeout ended, consuming nothing, with the connection given back. The
// locked protocol waits in round trip 1; the optimistic protocol reads
// without locks and waits in its conditional write, which the server
// rejects before its implicit COMMIT.
func requireWaitTimedOut(t *testing.T, e entry, err error, pool *pgxpool.Pool) {
	t.Helper()
	op := postgres.OpLock
	if e.optimistic() {
		op = postgres.OpWrite
	}
	ae := requireAdmissionError(t, err, op, false)
	require.True(t, ae.Timeout)
	require.ErrorIs(t, err, postgres.ErrTimeout)
	requireNoneAcquired(t, pool)
}

// An advisory lock held on a key without a row, past the operation
// timeout, fails the admission as definitely not consumed: the locked
// protocol waits for it in round trip 1, the optimistic insert in its
// write, and each ends the wait by its own lock timeout. Nothing is stored,
// and the key is admitted once the lock is gone.
func TestAdmitTimesOutOnAHeldAdvisoryLockOfANewKey(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		// A budget of 3 s: the server's lock timeout ends the wait 250 ms
		// before the budget does, which leaves a loaded machine time to
		// deliver its answer.
		store, pool := f.newStore(t, e.cfg(postgres.Config{OperationTimeout: 3 * time.Second}), named("advisory-lock"))
		checks := e.checks(f, policy(t, "held.new", 5, time.Hour), "new")

		tx := f.hold(t)
		lockAdvisory(t, tx, checks[0])
		_, err := e.admit(context.Background(), store, checks)
		requireWaitTimedOut(t, e, err, pool)
		require.Equal(t, int32(1), pool.Stat().TotalConns(), "the server ended the wait: the connection is kept")
		require.NoError(t, tx.Rollback(context.Background()))

		f.requireAbsent(t, checks)
		e.allow(t, store, checks)
		f.requireUsed(t, checks, 1)
	})
}

// A connection stalled by the network is given up at the client-side
// deadline and closed, not pooled; before COMMIT nothing was consumed.
func TestAdmitClientDeadlineBeforeCommitClosesConnection(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		store, pool, w := f.newWiredStore(t, e.cfg(postgres.Config{OperationTimeout: time.Second}))
		p := policy(t, "stall.read", 5, time.Hour)
		warm, fresh := e.checks(f, p, "warm"), e.checks(f, p, "fresh")
		e.allow(t, store, warm)
		e.allow(t, store, warm)
		require.Equal(t, int32(1), pool.Stat().TotalConns())

		w.stallNext(1)
		_, err := e.admit(context.Background(), store, fresh)
		ae := requireAdmissionError(t, err, postgres.OpLock, false)
		require.True(t, ae.Timeout)
		requireNoneAcquired(t, pool)
		require.Zero(t, pool.Stat().TotalConns(), "the stalled connection must be closed")

		w.stallFrom.Store(0)
		f.requireAbsent(t, fresh)
		e.allowOnNewConnection(t, store, fresh)
	})
}

// A COMMIT whose answer never arrives may have consumed quota, and says
// so. Here the server did commit.
func TestAdmitCommitTimeoutMayHaveConsumed(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		store, pool, w := f.newWiredStore(t, e.cfg(postgres.Config{OperationTimeout: time.Second}))
		checks := e.checks(f, policy(t, "stall.commit", 5, time.Hour), "c")
		e.allow(t, store, checks)
		e.allow(t, store, checks)

		w.stallNext(2)
		_, err := e.admit(context.Background(), store, checks)
		ae := requireAdmissionError(t, err, postgres.OpCommit, true)
		require.True(t, ae.Timeout)
		require.Zero(t, pool.Stat().TotalConns(), "a commit timeout closes the connection")

		require.Eventually(t, func() bool {
			for _, c := range checks {
				if got, _ := f.stored(t, c); got.Used != 3 {
					return false
				}
			}
			return true
		}, 10*time.Second, 5*time.Millisecond, "the server received and ran the COMMIT")
	})
}

// A denial decided before a rollback that fails is still returned; the
// connection is closed instead of pooled.
func TestAdmitDenialSurvivesFailedRollback(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		store, pool, w := f.newWiredStore(t, e.cfg(postgres.Config{OperationTimeout: time.Second}))
		checks := e.checks(f, policy(t, "stall.rollback", 1, time.Hour), "c")
		e.allow(t, store, checks)
		want := verdict{outcome: domain.Denied, index: 0, reason: domain.QuotaExhausted}
		r, err := e.admit(context.Background(), store, checks)
		require.NoError(t, err)
		require.Equal(t, want, r)

		w.stallNext(2)
		r, err = e.admit(context.Background(), store, checks)
		require.NoError(t, err)
		require.Equal(t, want, r)
		if e.optimistic() {
			// An optimistic denial is one round trip, a read, with nothing
			// to roll back: the connection is pooled, and the stall
			// awaits whatever comes next.
			require.Equal(t, int32(1), pool.Stat().TotalConns())
		} else {
			require.Zero(t, pool.Stat().TotalConns())
		}
		f.requireUsed(t, checks, 1)
	})
}

// A trigger failing after the insert, inside the database, fails the
// admission before COMMIT: definitely not consumed, nothing stored. In the
// batch, the update of the stored companion is rolled back too.
func TestAdmitFailingTriggerStoresNothing(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		ctx := context.Background()
		p := policy(t, "trigger", 5, time.Hour)
		fresh, stored := f.check(p, "fresh"), f.check(p, "stored")
		checks := []domain.Check{fresh}
		if e.batch {
			checks = append(checks, stored)
		}
		requireAllowed(t, admit(t, f.store, stored))
		_, err := f.db.Pool.Exec(ctx, `
			CREATE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'injected failure'; END $$;
			CREATE TRIGGER zz_test_fail AFTER INSERT ON runlimit_fixed_windows
				FOR EACH STATEMENT EXECUTE FUNCTION test_fail();`)
		require.NoError(t, err)

		_, err = e.admit(ctx, f.store, checks)
		ae := requireAdmissionError(t, err, postgres.OpWrite, false)
		require.False(t, ae.Timeout)
		require.NotContains(t, err.Error(), "\\x", "no key bytes in the error text")
		f.requireAbsent(t, checks[:1])
		f.requireUsed(t, []domain.Check{stored}, 1)
		require.Zero(t, f.ledger(t, postgres.ShardOf(fresh.CounterKey()))-
			boolInt(postgres.ShardOf(fresh.CounterKey()) == postgres.ShardOf(stored.CounterKey())))
		requireNoneAcquired(t, f.db.Pool)
		requireAllowed(t, admit(t, f.store, stored))
	})
}

// An error from COMMIT itself is reported as possibly consumed: the store
// never guesses that a failed commit rolled back.
func TestAdmitCommitErrorMayHaveConsumed(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		ctx := context.Background()
		_, err := f.db.Pool.Exec(ctx, `
			CREATE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'injected commit failure'; END $$;
			CREATE CONSTRAINT TRIGGER zz_test_fail AFTER INSERT ON runlimit_fixed_windows
				DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_fail();`)
		require.NoError(t, err)
		checks := e.checks(f, policy(t, "commit.error", 5, time.Hour), "c")

		_, err = e.admit(ctx, f.store, checks)
		requireAdmissionError(t, err, postgres.OpCommit, true)
		requireNoneAcquired(t, f.db.Pool)
		f.requireAbsent(t, checks)
	})
}

func TestAdmitAcquireTimeout(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		store, pool := f.newStore(t, e.cfg(postgres.Config{AcquireTimeout: 50 * time.Millisecond}), func(c *pgxpool.Config) { c.MaxConns = 1 })
		checks := e.checks(f, policy(t, "acquire", 5, time.Hour), "c")
		busy, err := pool.Acquire(context.Background())
		require.NoError(t, err)

		_, err = e.admit(context.Background(), store, checks)
		ae := requireAdmissionError(t, err, postgres.OpAcquire, false)
		require.True(t, ae.Timeout)
		busy.Release()
		f.requireAbsent(t, checks)
		e.allow(t, store, checks)
	})
}

// A stored counter the domain rejects fails the admission closed, without
// consuming or changing anything.
func TestAdmitCorruptCounterFailsClosed(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		p := policy(t, "corrupt", 5, time.Hour)
		checks := e.checks(f, p, "c")
		e.allow(t, f.store, checks)
		// Only the first check's counter is corrupt.
		k := checks[0].CounterKey().Bytes()
		_, err := f.db.Pool.Exec(context.Background(),
			"UPDATE runlimit_fixed_windows SET used = 99 WHERE config_fingerprint = $1 AND subject_key = $2", k[:32], k[32:])
		require.NoError(t, err)

		_, err = e.admit(context.Background(), f.store, checks)
		requireAdmissionError(t, err, postgres.OpEvaluate, false)
		require.ErrorIs(t, err, domain.ErrCorruptCounter)
		f.requireUsed(t, checks[:1], 99)
		f.requireUsed(t, checks[1:], 1)
		requireNoneAcquired(t, f.db.Pool)
	})
}

func TestAdmitFailsClosedWhenSchemaIsMissing(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		db := pgtest.NewEmpty(t)
		store, err := postgres.New(db.Pool, e.cfg(postgres.Config{}))
		require.NoError(t, err)
		hasher, err := domain.NewKeyHasher([]byte("runlimit postgres store tests, 32+ bytes of secret"))
		require.NoError(t, err)
		f := &fixture{db: db, store: store, hasher: hasher}

		_, err = e.admit(context.Background(), store, e.checks(f, policy(t, "schema", 1, time.Hour), "c"))
		// The connection cannot be made ready: its statements name objects
		// that do not exist, the tables, which it locks first.
		requireAdmissionError(t, err, postgres.OpAcquire, false)
		var dbErr *postgres.DatabaseError
		require.ErrorAs(t, err, &dbErr)
		require.Equal(t, "42P01", dbErr.Code) // undefined_table
		_, err = store.Stats(context.Background())
		var me *postgres.MaintenanceError
		require.ErrorAs(t, err, &me)
	})
}

func TestAdmitAfterCloseFailsClosed(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		checks := e.checks(f, policy(t, "closed", 5, time.Hour), "c")
		require.NoError(t, f.store.Close())
		require.NoError(t, f.store.Close())

		_, err := e.admit(context.Background(), f.store, checks)
		requireAdmissionError(t, err, postgres.OpAdmit, false)
		require.ErrorIs(t, err, postgres.ErrClosed)
		require.ErrorIs(t, err, ports.ErrClosed)
		_, err = f.store.CleanupExpired(context.Background(), 10)
		require.ErrorIs(t, err, ports.ErrClosed)
		_, err = f.store.Stats(context.Background())
		require.ErrorIs(t, err, ports.ErrClosed)
		require.Zero(t, f.db.Pool.Stat().AcquireCount(), "a closed store must not even take a connection")
		// The pool belongs to the caller and stays open.
		require.NoError(t, f.db.Pool.Ping(context.Background()))
	})
}

func TestAdmitWithDoneContextTouchesNothing(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		f := setup(t, e.cfg(postgres.Config{}))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := e.admit(ctx, f.store, e.checks(f, policy(t, "done", 5, time.Hour), "c"))
		requireAdmissionError(t, err, postgres.OpAdmit, false)
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, f.db.Pool.Stat().AcquireCount(), "a done context must not even take a connection")
	})
}
