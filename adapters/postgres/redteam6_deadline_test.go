package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/ports"
)

// A caller whose deadline sets the server's statement and lock timeouts
// finds its deadline in the error when the server's timeout, which strikes
// a little before it, ends a wait for a table that another session holds
// locked: the error matches context.DeadlineExceeded as well as
// [postgres.ErrTimeout], whether the server or the client ended the wait,
// at every entry point (admissions, Ready, Stats, cleanup). The deadline is
// a second away so that the server's timeout usually strikes first (100 ms
// before it); either way the answer must be the same.
func TestServerTimeoutSetByTheCallersDeadlineMatchesDeadlineExceeded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		table string
		run   func(ctx context.Context, f *fixture, s *postgres.Store) error
	}{
		{"admit", "runlimit_fixed_windows", func(ctx context.Context, f *fixture, s *postgres.Store) error {
			_, err := s.AdmitCheck(ctx, f.check(policy(t, "deadline.admit", 5, time.Hour), "c"))
			return err
		}},
		{"ready/version table", "runlimit_schema_version", func(ctx context.Context, _ *fixture, s *postgres.Store) error {
			return s.Ready(ctx)
		}},
		{"ready/counters table", "runlimit_fixed_windows", func(ctx context.Context, _ *fixture, s *postgres.Store) error {
			return s.Ready(ctx)
		}},
		{"stats", "runlimit_capacity_shards", func(ctx context.Context, _ *fixture, s *postgres.Store) error {
			_, err := s.Stats(ctx)
			return err
		}},
		{"cleanup", "runlimit_fixed_windows", func(ctx context.Context, _ *fixture, s *postgres.Store) error {
			_, err := s.CleanupExpired(ctx, 10)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, postgres.Config{})
			// A budget far beyond the deadline: only the caller's deadline
			// sets the server's timeouts.
			store, _ := f.newStore(t, postgres.Config{OperationTimeout: time.Minute}, named("deadline-"+tc.name))
			f.db.LockTable(t, tc.table)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := tc.run(ctx, f, store)
			require.Error(t, err)
			require.ErrorIs(t, err, postgres.ErrTimeout)
			require.ErrorIs(t, err, context.DeadlineExceeded, "%v", err)
			require.False(t, ports.MayHaveConsumedQuota(err))
		})
	}
}

// A server timeout that the store's budget set, for a caller without a
// deadline, is the store's and not a caller's deadline.
//
// The server's statement timeout strikes 250 ms before the budget ends
// (appendServerTimeout's largest margin). A machine loaded enough to keep
// the server's answer from the client for longer lets the budget end the
// wait on the client instead: a client-side timeout with no SQLSTATE, which
// tells nothing about the rule under test. Such an attempt is logged and
// made again, up to attempts in all; a store that set no server timeout
// from its budget ends every attempt that way and fails. Any other
// outcome is judged at once.
func TestServerTimeoutSetByTheBudgetIsNotTheCallersDeadline(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	// 3 s, for a margin of 250 ms: see TestAdmitTimesOutOnAHeldTableLock.
	store, _ := f.newStore(t, postgres.Config{OperationTimeout: 3 * time.Second}, named("deadline-budget"))
	f.db.LockTable(t, "runlimit_schema_version")
	const attempts = 4
	for try := 1; ; try++ {
		err := store.Ready(context.Background())
		require.ErrorIs(t, err, postgres.ErrTimeout)
		var dbErr *postgres.DatabaseError
		require.ErrorAs(t, err, &dbErr)
		if dbErr.Code == "" && dbErr.Timeout && try < attempts {
			t.Logf("attempt %d of %d: the budget ended the wait on the client before the server's statement timeout was answered (%v); the machine held the answer back, trying again", try, attempts, err)
			continue
		}
		require.Equal(t, "57014", dbErr.Code, "the server's statement timeout ended the wait (attempt %d of %d): %v", try, attempts, err)
		require.NotErrorIs(t, err, context.DeadlineExceeded, "%v", err)
		return
	}
}
