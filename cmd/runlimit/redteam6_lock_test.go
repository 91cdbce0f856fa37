package main

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/internal/testkit"
)

// failSafe bounds how long a test waits for a command that must return;
// reaching it fails the test, it is not a measure of speed.
const failSafe = 2 * time.Minute

// executeBounded runs a command as execute does, in a goroutine, and
// fails the test if it has not returned within failSafe.
func executeBounded(t *testing.T, args ...string) result {
	t.Helper()
	done := make(chan result, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, noEnv, &stdout, &stderr)
		done <- result{code: code, stdout: stdout.String(), stderr: stderr.String()}
	}()
	return testkit.Receive(t, done, failSafe, "runlimit "+strings.Join(args[:1], " ")+" to return")
}

// runlimit migrate, status and cleanup, once connected, give up waiting
// for a lock that another session holds on one of Runlimit's tables (a
// hostile role's LOCK TABLE, a long transaction, another migration) after
// --timeout: exit code 1, with an error that says a lock outlasted the
// timeout and names the table whose lock the other session holds, and no
// password. Without the bound, migrate waited for as long as the lock was
// held.
func TestDatabaseCommandsGiveUpOnAHeldLock(t *testing.T) {
	t.Parallel()
	const password = "pw-hunter2-locked"
	for _, tc := range []struct {
		name  string
		table string
		args  []string
	}{
		{"migrate/version table", "runlimit_schema_version", []string{"migrate"}},
		// tern's session-level advisory lock, which another migration
		// (a service's on start, another runlimit migrate) holds.
		{"migrate/migration lock", "", []string{"migrate"}},
		{"status/ledger", "runlimit_capacity_shards", []string{"status"}},
		{"cleanup/counters", "runlimit_fixed_windows", []string{"cleanup"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := pgtest.New(t)
			u, err := url.Parse(db.URL)
			require.NoError(t, err)
			// The local server trusts its clients: the password is only
			// something that must not be printed.
			u.User = url.UserPassword(u.User.Username(), password)
			named := tc.table
			if tc.table == "" {
				holdMigrationLock(t, db)
				named = "tern's migration lock"
			} else {
				db.LockTable(t, tc.table)
			}
			args := append(append([]string{}, tc.args...), "--timeout", "1s", "--database-url", u.String())
			r := executeBounded(t, args...)
			require.Equal(t, 1, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, "lock")
			require.Contains(t, r.stderr, named, "the error names the held lock")
			require.NotContains(t, r.stderr, password)
			require.NotContains(t, r.stdout, password)
		})
	}
}

// holdMigrationLock takes tern's migration lock in a session of its own
// until the test ends, as a migration in progress does.
func holdMigrationLock(t *testing.T, db *pgtest.Database) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "SELECT pg_advisory_unlock_all()")
		conn.Release()
	})
	_, err = conn.Exec(ctx, "SELECT pg_advisory_lock($1)", ternLockKey)
	require.NoError(t, err)
}

// migrate, status and cleanup work under the timeouts a DBA may set for
// the role they run as, as the services' store does: a statement_timeout
// or an idle_in_transaction_session_timeout of 1 ms (ALTER ROLE ... SET)
// failed every command, or killed migrate's session between its
// statements. The commands bound their sessions by --timeout instead.
func TestDatabaseCommandsOverrideTheRolesTimeouts(t *testing.T) {
	t.Parallel()
	for _, setting := range []string{"statement_timeout", "idle_in_transaction_session_timeout"} {
		for _, cmd := range []string{"migrate", "status", "cleanup"} {
			t.Run(setting+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				db := pgtest.New(t)
				if cmd == "migrate" {
					db = pgtest.NewEmpty(t)
				}
				role := db.NewRole(t, "svc")
				_, err := db.Pool.Exec(context.Background(), "GRANT postgres TO "+role.Name)
				require.NoError(t, err)
				db.SetRoleSetting(t, role, setting, "1ms")
				r := executeBounded(t, cmd, "--database-url", role.URL)
				require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			})
		}
	}
}
