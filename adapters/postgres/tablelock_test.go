package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
)

// lockTable takes an ACCESS EXCLUSIVE lock on the counters table in tx, as
// an ALTER TABLE does, or a role holding UPDATE on it with LOCK TABLE.
func lockTable(t *testing.T, tx pgx.Tx) {
	t.Helper()
	_, err := tx.Exec(context.Background(), "LOCK TABLE runlimit_fixed_windows IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
}

// A table lock held past the operation timeout fails every entry point as
// a timeout that consumed nothing, whether or not the caller has a
// deadline of its own, and the connection survives: the server's own
// timeouts end the wait before the store's budget, which would close the
// connection. The optimistic read waits for the table's lock when the
// server binds it, before any expression of its own could set a timeout.
// Once the lock is gone, the same connection admits.
//
// The caller's deadline strikes once the admission is seen waiting for
// the lock on the server, not after a fixed 5 ms: on a loaded machine
// that could pass before the lock was even asked for, and the admission
// then failed at an earlier step than the one under test.
func TestAdmitTimesOutOnAHeldTableLock(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		for _, deadline := range []string{"none", "struck during the wait"} {
			f := setup(t, e.cfg(postgres.Config{}))
			// A budget of 3 s: the server's timeout ends the wait 250 ms
			// before it (appendServerTimeout's largest margin), which a
			// loaded machine's scheduling delays stay under; with 1 s the
			// margin was 100 ms, and a busy run saw the budget end first.
			// With a deadline, a budget far beyond it: the server's timeout
			// set from the budget cannot end the wait before the deadline
			// strikes, however slow the look for the wait is.
			budget := 3 * time.Second
			if deadline != "none" {
				budget = time.Minute
			}
			store, pool := f.newStore(t, e.cfg(postgres.Config{OperationTimeout: budget}), named("table-lock"))
			checks := e.checks(f, policy(t, "table.lock", 5, time.Hour), "held")
			e.allow(t, store, checks)
			before := backends(t, pool)

			tx := f.hold(t)
			lockTable(t, tx)
			var err error
			if deadline == "none" {
				_, err = e.admit(context.Background(), store, checks)
			} else {
				ctx := newStrikingDeadline(time.Hour)
				answer := make(chan error, 1)
				go func() {
					_, err := e.admit(ctx, store, checks)
					answer <- err
				}()
				f.waitForLockWait(t, "table-lock")
				ctx.strike()
				err = testkit.Receive(t, answer, failSafe, "the admission's answer")
				require.ErrorIs(t, err, context.DeadlineExceeded)
			}
			ae := requireAdmissionError(t, err, postgres.OpLock, false)
			require.True(t, ae.Timeout, "deadline %v", deadline)
			require.ErrorIs(t, err, postgres.ErrTimeout)
			require.NoError(t, tx.Rollback(context.Background()))

			// The caller who left at its deadline has its answer before the
			// work has given the connection back.
			requireNoneAcquired(t, pool)
			require.Equal(t, before, backends(t, pool), "deadline %v: the connection was replaced", deadline)
			f.requireUsed(t, checks, 1)
			e.allow(t, store, checks)
			f.requireUsed(t, checks, 2)
		}
	})
}

// An optimistic write that meets a table lock taken after its read (an
// ALTER TABLE that began in between) ends by the server's lock timeout
// too: the update sets its timeouts in a statement before its own, since
// the server locks the update's table when it binds it. Nothing is
// consumed and the connection survives.
func TestOptimisticWriteTimesOutOnATableLockTakenAfterTheRead(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	const app = "opt-table-lock"
	// 3 s, for a margin of 250 ms: see TestAdmitTimesOutOnAHeldTableLock.
	store, pool, w := f.newNamedWiredStore(t, postgres.Config{Protocol: postgres.Optimistic, OperationTimeout: 3 * time.Second}, app)
	c := f.check(policy(t, "opt.table.lock", 5, time.Hour), "c")
	requireAllowed(t, admit(t, store, c))
	before := backends(t, pool)

	answers, let := f.checkHeldAfterRead(t, w, store, app, c)
	tx := f.hold(t)
	lockTable(t, tx)
	let()
	a := <-answers
	require.NoError(t, tx.Rollback(context.Background()))
	ae := requireAdmissionError(t, a.err, postgres.OpWrite, false)
	require.True(t, ae.Timeout)
	require.Equal(t, before, backends(t, pool), "the connection was replaced")
	f.requireUsed(t, []domain.Check{c}, 1)
	d, err := store.AdmitCheck(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, domain.Allowed, d.Outcome())
	f.requireUsed(t, []domain.Check{c}, 2)
}

// A backend terminated while its warm-up waits (here for a table's lock)
// fails the admission with the server's own reason, 57P01, as nothing
// consumed: not with the closed connection the termination leaves behind,
// which said nothing of why.
func TestWarmUpTerminatedReportsTheServersReason(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	const app = "warm-terminated"
	store, _ := f.newStore(t, postgres.Config{OperationTimeout: 30 * time.Second}, named(app))
	c := f.check(policy(t, "warm.terminated", 5, time.Hour), "c")

	tx := f.hold(t)
	lockTable(t, tx)
	answer := make(chan error, 1)
	go func() {
		_, err := store.AdmitCheck(context.Background(), c)
		answer <- err
	}()
	require.Eventually(t, func() bool { return f.waitsForLock(app) }, 10*time.Second, time.Millisecond)
	_, err := f.db.Pool.Exec(context.Background(), `SELECT pg_catalog.pg_terminate_backend(pid)
		FROM pg_catalog.pg_stat_activity WHERE datname = current_database() AND application_name = $1`, app)
	require.NoError(t, err)
	err = <-answer
	require.NoError(t, tx.Rollback(context.Background()))

	requireAdmissionError(t, err, postgres.OpAcquire, false)
	var dbErr *postgres.DatabaseError
	require.ErrorAs(t, err, &dbErr, "the server's reason, not a closed connection: %v", err)
	require.Equal(t, "57P01", dbErr.Code)
	f.requireAbsent(t, []domain.Check{c})
	_, err = store.AdmitCheck(context.Background(), c)
	require.NoError(t, err, "a new connection serves once the lock is gone")
}
