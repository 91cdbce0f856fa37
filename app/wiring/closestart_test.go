package wiring_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// hangLimit only turns a hang into a failure instead of the test binary's
// timeout; nothing here waits for it to pass.
const hangLimit = 10 * time.Second

// TestCloseDuringAStuckStartKeepsItsDeadline: a Start whose migration waits
// on a table lock (another session's ALTER, a replica's migration) held
// the Runtime's lock for as long as its context allowed, forever with
// context.Background, and Close waited for that lock whatever its own
// context said: a shutdown with a 5 ms deadline, or one already done, hung
// with the Start. Close now cancels a Start in progress and returns when
// its context ends; the Start fails with ErrClosed, and the pool the
// Start opened is closed all the same.
func TestCloseDuringAStuckStartKeepsItsDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)

	// Another session holds the schema's version table, which the
	// migration reads first, until the test ends.
	locker, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	tx, err := locker.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = tx.Rollback(context.Background())
		locker.Release()
	})
	_, err = tx.Exec(ctx, "LOCK TABLE public.runlimit_schema_version IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	// The Runtime's sessions are told apart by their application_name.
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", "closestart")
	u.RawQuery = q.Encode()
	r, err := wiring.New(ctx, wiring.Config{
		DatabaseURL: wiring.NewSecret(u.String()), Migrate: true, SecretEnv: setEnv(t, testSecret),
	})
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- r.Start(ctx) }()

	// Wait until the Start's migration waits for the lock.
	require.Eventually(t, func() bool {
		var waiting int
		err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_locks
			WHERE NOT granted AND relation = 'public.runlimit_schema_version'::regclass`).Scan(&waiting)
		return err == nil && waiting > 0
	}, hangLimit, time.Millisecond)

	closed := make(chan error, 1)
	go func() { closed <- r.Close(doneContext()) }()
	select {
	case err := <-closed:
		// Close either saw the Start give up, and closed everything, or
		// says it did not wait for it.
		if err != nil {
			require.ErrorIs(t, err, context.Canceled)
		}
	case <-time.After(hangLimit):
		t.Fatal("Close with a done context waited for the Start, which waits for the table lock")
	}

	select {
	case err := <-started:
		require.ErrorIs(t, err, wiring.ErrClosed, "Close cancelled the Start")
		require.False(t, errors.Is(err, context.DeadlineExceeded))
	case <-time.After(hangLimit):
		t.Fatal("the Start went on waiting for the table lock after Close")
	}
	// Everything the Start opened is closed: a Close without a deadline
	// returns once it is, and nothing is left to report.
	require.NoError(t, r.Close(ctx))
	require.ErrorIs(t, r.Ready(ctx), wiring.ErrClosed)
	// The server ends a session soon after its client closes it.
	require.Eventually(t, func() bool {
		var conns int
		err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_stat_activity
			WHERE application_name = 'closestart'`).Scan(&conns)
		return err == nil && conns == 0
	}, hangLimit, time.Millisecond, "the Runtime's connections are closed")
}
