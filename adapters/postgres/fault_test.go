package postgres_test

import (
	"context"
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

// requireAdmissionError asserts err is a *AdmissionError at step op that says
// whether quota may have been consumed, through the port's predicate too.
func requireAdmissionError(t *testing.T, err error, op string, mayHaveConsumed bool) *postgres.AdmissionError {
	t.Helper()
	var ce *postgres.AdmissionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, op, ce.Op)
	require.Equal(t, mayHaveConsumed, ce.MayHaveConsumed)
	require.Equal(t, mayHaveConsumed, ports.MayHaveConsumedQuota(err))
	return ce
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
	require.Eventually(t, func() bool {
		var waiting int
		err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&waiting)
		return err == nil && waiting == 1
	}, 10*time.Second, 5*time.Millisecond)
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
	f := setup(t, postgres.Config{})
	store, pool := f.newStore(t, postgres.Config{OperationTimeout: 200 * time.Millisecond}, named("row-lock"))
	p := policy(t, "held", 5, time.Hour)
	c := f.check(p, "held")
	requireAllowed(t, admit(t, store, c))

	tx := f.hold(t)
	lockRow(t, tx, c)
	_, err := tryAdmit(context.Background(), store, c)
	ce := requireAdmissionError(t, err, postgres.OpLock, false)
	require.True(t, ce.Timeout)
	require.ErrorIs(t, err, postgres.ErrTimeout)
	require.Zero(t, pool.Stat().AcquiredConns())
	require.NoError(t, tx.Rollback(context.Background()))

	got, _ := f.stored(t, c)
	require.Equal(t, int64(1), got.Used)
	requireAllowed(t, admit(t, store, c))
}

// A connection stalled by the network is given up at the client-side
// deadline and closed, not pooled; before COMMIT nothing was consumed.
func TestAdmitClientDeadlineBeforeCommitClosesConnection(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	store, pool, w := f.newWiredStore(t, postgres.Config{OperationTimeout: 200 * time.Millisecond})
	p := policy(t, "stall.read", 5, time.Hour)
	warm, fresh := f.check(p, "warm"), f.check(p, "fresh")
	requireAllowed(t, admit(t, store, warm))
	requireAllowed(t, admit(t, store, warm))
	require.Equal(t, int32(1), pool.Stat().TotalConns())

	w.stallNext(1)
	_, err := tryAdmit(context.Background(), store, fresh)
	ce := requireAdmissionError(t, err, postgres.OpLock, false)
	require.True(t, ce.Timeout)
	require.Zero(t, pool.Stat().AcquiredConns())
	require.Zero(t, pool.Stat().TotalConns(), "the stalled connection must be closed")

	w.stallFrom.Store(0)
	_, ok := f.stored(t, fresh)
	require.False(t, ok)
	requireAllowed(t, admit(t, store, fresh))
}

// A COMMIT whose answer never arrives may have consumed quota, and says
// so. Here the server did commit.
func TestAdmitCommitTimeoutMayHaveConsumed(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	store, pool, w := f.newWiredStore(t, postgres.Config{OperationTimeout: 300 * time.Millisecond})
	p := policy(t, "stall.commit", 5, time.Hour)
	c := f.check(p, "c")
	requireAllowed(t, admit(t, store, c))
	requireAllowed(t, admit(t, store, c))

	w.stallNext(2)
	_, err := tryAdmit(context.Background(), store, c)
	ce := requireAdmissionError(t, err, postgres.OpCommit, true)
	require.True(t, ce.Timeout)
	require.Zero(t, pool.Stat().TotalConns(), "a commit timeout closes the connection")

	require.Eventually(t, func() bool {
		got, _ := f.stored(t, c)
		return got.Used == 3
	}, 10*time.Second, 5*time.Millisecond, "the server received and ran the COMMIT")
}

// A denial decided before a rollback that fails is still returned; the
// connection is closed instead of pooled.
func TestAdmitDenialSurvivesFailedRollback(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	store, pool, w := f.newWiredStore(t, postgres.Config{OperationTimeout: 300 * time.Millisecond})
	p := policy(t, "stall.rollback", 1, time.Hour)
	c := f.check(p, "c")
	requireAllowed(t, admit(t, store, c))
	requireDenied(t, admit(t, store, c), 0, domain.QuotaExhausted)

	w.stallNext(2)
	d, err := tryAdmit(context.Background(), store, c)
	require.NoError(t, err)
	requireDenied(t, d, 0, domain.QuotaExhausted)
	require.Zero(t, pool.Stat().TotalConns())
}

// A trigger failing after the insert, inside the database, fails the
// admission before COMMIT: definitely not consumed, nothing stored.
func TestAdmitFailingTriggerStoresNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	ctx := context.Background()
	p := policy(t, "trigger", 5, time.Hour)
	stored, fresh := f.check(p, "stored"), f.check(p, "fresh")
	requireAllowed(t, admit(t, f.store, stored))
	_, err := f.db.Pool.Exec(ctx, `
		CREATE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'injected failure'; END $$;
		CREATE TRIGGER zz_test_fail AFTER INSERT ON runlimit_fixed_windows
			FOR EACH STATEMENT EXECUTE FUNCTION test_fail();`)
	require.NoError(t, err)

	_, err = tryAdmit(ctx, f.store, stored, fresh)
	ce := requireAdmissionError(t, err, postgres.OpWrite, false)
	require.False(t, ce.Timeout)
	require.NotContains(t, err.Error(), "\\x", "no key bytes in the error text")
	_, ok := f.stored(t, fresh)
	require.False(t, ok)
	got, _ := f.stored(t, stored)
	require.Equal(t, int64(1), got.Used, "the update of the same batch is rolled back too")
	require.Zero(t, f.ledger(t, postgres.ShardOf(fresh.CounterKey()))-
		boolInt(postgres.ShardOf(fresh.CounterKey()) == postgres.ShardOf(stored.CounterKey())))
	require.Zero(t, f.db.Pool.Stat().AcquiredConns())
	requireAllowed(t, admit(t, f.store, stored))
}

// An error from COMMIT itself is reported as possibly consumed: the store
// never guesses that a failed commit rolled back.
func TestAdmitCommitErrorMayHaveConsumed(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	ctx := context.Background()
	_, err := f.db.Pool.Exec(ctx, `
		CREATE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'injected commit failure'; END $$;
		CREATE CONSTRAINT TRIGGER zz_test_fail AFTER INSERT ON runlimit_fixed_windows
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_fail();`)
	require.NoError(t, err)
	p := policy(t, "commit.error", 5, time.Hour)
	c := f.check(p, "c")

	_, err = tryAdmit(ctx, f.store, c)
	requireAdmissionError(t, err, postgres.OpCommit, true)
	require.Zero(t, f.db.Pool.Stat().AcquiredConns())
}

func TestAdmitAcquireTimeout(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	store, pool := f.newStore(t, postgres.Config{AcquireTimeout: 50 * time.Millisecond}, func(c *pgxpool.Config) { c.MaxConns = 1 })
	p := policy(t, "acquire", 5, time.Hour)
	busy, err := pool.Acquire(context.Background())
	require.NoError(t, err)

	_, err = tryAdmit(context.Background(), store, f.check(p, "c"))
	ce := requireAdmissionError(t, err, postgres.OpAcquire, false)
	require.True(t, ce.Timeout)
	busy.Release()
	requireAllowed(t, admit(t, store, f.check(p, "c")))
}

// A stored counter the domain rejects fails the admission closed, without
// consuming or changing it.
func TestAdmitCorruptCounterFailsClosed(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	p := policy(t, "corrupt", 5, time.Hour)
	c := f.check(p, "c")
	requireAllowed(t, admit(t, f.store, c))
	_, err := f.db.Pool.Exec(context.Background(), "UPDATE runlimit_fixed_windows SET used = 99")
	require.NoError(t, err)

	_, err = tryAdmit(context.Background(), f.store, c)
	requireAdmissionError(t, err, postgres.OpEvaluate, false)
	require.ErrorIs(t, err, domain.ErrCorruptCounter)
	got, _ := f.stored(t, c)
	require.Equal(t, int64(99), got.Used)
	require.Zero(t, f.db.Pool.Stat().AcquiredConns())
}

func TestAdmitFailsClosedWhenSchemaIsMissing(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	store, err := postgres.New(db.Pool, postgres.Config{})
	require.NoError(t, err)
	f := &fixture{db: db, store: store}
	hasher, err := domain.NewKeyHasher([]byte("runlimit postgres store tests, 32+ bytes of secret"))
	require.NoError(t, err)
	f.hasher = hasher

	_, err = tryAdmit(context.Background(), store, f.check(policy(t, "schema", 1, time.Hour), "c"))
	// The connection cannot be made ready: its statements name objects
	// that do not exist, the lock function first.
	requireAdmissionError(t, err, postgres.OpAcquire, false)
	var dbErr *postgres.DatabaseError
	require.ErrorAs(t, err, &dbErr)
	require.Equal(t, "42883", dbErr.Code) // undefined_function
	_, err = store.Stats(context.Background())
	var me *postgres.MaintenanceError
	require.ErrorAs(t, err, &me)
}

func TestAdmitAfterCloseFailsClosed(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	p := policy(t, "closed", 5, time.Hour)
	require.NoError(t, f.store.Close())
	require.NoError(t, f.store.Close())

	_, err := tryAdmit(context.Background(), f.store, f.check(p, "c"))
	requireAdmissionError(t, err, postgres.OpAdmit, false)
	require.ErrorIs(t, err, postgres.ErrClosed)
	_, err = f.store.CleanupExpired(context.Background(), 10)
	require.ErrorIs(t, err, postgres.ErrClosed)
	_, err = f.store.Stats(context.Background())
	require.ErrorIs(t, err, postgres.ErrClosed)
	// The pool belongs to the caller and stays open.
	require.NoError(t, f.db.Pool.Ping(context.Background()))
}

func TestAdmitWithDoneContextTouchesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tryAdmit(ctx, f.store, f.check(policy(t, "done", 5, time.Hour), "c"))
	requireAdmissionError(t, err, postgres.OpAdmit, false)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, f.db.Pool.Stat().AcquireCount(), "a done context must not even take a connection")
}
