package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// addCounters stores n counters of policy id through the PostgreSQL store,
// one subject each, with a one-minute window.
func addCounters(t *testing.T, pool *pgxpool.Pool, id string, n int) {
	t.Helper()
	store, err := postgres.New(pool, postgres.Config{})
	require.NoError(t, err)
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	require.NoError(t, err)
	policy, err := domain.ParsePolicy(id, "subject", 10, time.Minute)
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("runlimit command tests, 32+ bytes of secret"))
	require.NoError(t, err)
	for i := range n {
		d, err := limiter.Check(context.Background(), domain.NewCheck(policy, hasher.KeyString(policy, fmt.Sprintf("subject-%d", i))))
		require.NoError(t, err)
		require.Equal(t, domain.Allowed, d.Outcome())
	}
}

// expireAll moves every stored window an hour into the past, as the
// conformance harness lets time pass: no sleeping, no test hooks.
func expireAll(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(),
		`UPDATE runlimit_fixed_windows
		 SET window_started_at = window_started_at - interval '1 hour',
		     window_expires_at = window_expires_at - interval '1 hour'`)
	require.NoError(t, err)
}

func rowCount(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	var n int64
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM runlimit_fixed_windows").Scan(&n))
	return n
}

func TestCleanupRemovesExpiredRowsOnly(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	addCounters(t, db.Pool, "expired", 5)
	expireAll(t, db.Pool)
	addCounters(t, db.Pool, "active", 3)

	// Passes of 2 rows: 2, 2, 1, and the short pass ends the round.
	r := execute(t, noEnv, "cleanup", "--database-url", db.URL, "--batch", "2")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Equal(t, "removed 5 expired rows in 3 passes\n", r.stdout)
	require.EqualValues(t, 3, rowCount(t, db.Pool), "active counters stay")

	r = execute(t, noEnv, "cleanup", "--database-url", db.URL)
	require.Equal(t, 0, r.code)
	require.Equal(t, "removed 0 expired rows in 1 pass\n", r.stdout)
}

func TestCleanupStopsAtMaxPasses(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	addCounters(t, db.Pool, "expired", 5)
	expireAll(t, db.Pool)

	r := execute(t, noEnv, "cleanup", "--database-url", db.URL, "--batch", "2", "--max-passes", "2")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Equal(t, "removed 4 expired rows in 2 passes; stopped at --max-passes, more expired rows may remain\n", r.stdout)
	require.EqualValues(t, 1, rowCount(t, db.Pool))
}

// runCleanupLoop starts "runlimit cleanup --every" on db in a goroutine. The
// test reads its output line by line, cancels ctx to stop it, and receives
// its exit code from the returned channel.
func runCleanupLoop(ctx context.Context, db *pgtest.Database, extra ...string) (stdout, stderr *lineWriter, code <-chan int) {
	stdout, stderr = newLineWriter(), newLineWriter()
	done := make(chan int, 1)
	args := append([]string{"cleanup", "--database-url", db.URL}, extra...)
	go func() { done <- run(ctx, args, noEnv, stdout, stderr) }()
	return stdout, stderr, done
}

// nextLine waits for w's next line.
func nextLine(t *testing.T, w *lineWriter) string {
	t.Helper()
	select {
	case line := <-w.lines:
		return line
	case <-time.After(30 * time.Second):
		t.Fatalf("no output line within 30s; so far: %q", w.String())
		return ""
	}
}

// firstLine waits for the first line a cleanup loop writes to stdout,
// failing with what it wrote to stderr if it ends first.
func firstLine(t *testing.T, stdout, stderr *lineWriter, code <-chan int) string {
	t.Helper()
	select {
	case line := <-stdout.lines:
		return line
	case c := <-code:
		t.Fatalf("the command ended with code %d before its first round's line; stderr: %q", c, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("no output line within 30s; stdout: %q, stderr: %q", stdout.String(), stderr.String())
	}
	return ""
}

func exitCode(t *testing.T, code <-chan int) int {
	t.Helper()
	select {
	case c := <-code:
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not stop within 30s")
		return 0
	}
}

func TestCleanupEveryRunsAtOnceAndStopsOnCancel(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	addCounters(t, db.Pool, "expired", 3)
	expireAll(t, db.Pool)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// An interval the test never waits for: the first round runs at once.
	stdout, stderr, code := runCleanupLoop(ctx, db, "--every", "1h")
	require.Regexp(t, `^\S+ removed 3 expired rows in 1 pass$`, nextLine(t, stdout))
	cancel()
	require.Equal(t, 0, exitCode(t, code), "a signal ends the loop successfully; stderr: %s", stderr.String())
	require.Equal(t, "stopped: removed 3 expired rows in all", nextLine(t, stdout))
	require.Empty(t, stderr.String())
}

func TestCleanupEveryReportsAFailedRoundAndCarriesOn(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	addCounters(t, db.Pool, "expired", 2)
	expireAll(t, db.Pool)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A pass's budget is the time a locked round takes to fail below; the
	// first round must not run out of it on a loaded machine (a first
	// round that fails ends the command), so it is not tiny.
	stdout, stderr, code := runCleanupLoop(ctx, db, "--every", "10ms", "--timeout", "1s")
	require.Regexp(t, `removed 2 expired rows in 1 pass$`, firstLine(t, stdout, stderr, code))

	// Hold the table so that the next pass runs out of its budget. A
	// failed assertion below must not leave the lock's connection out of
	// the pool, whose Close in the database's cleanup would wait for it
	// until the binary's timeout: this cleanup, registered later, runs
	// first.
	tx, err := db.Pool.Begin(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	_, err = tx.Exec(context.Background(), "LOCK TABLE runlimit_fixed_windows IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	failure := nextLine(t, stderr)
	require.Contains(t, failure, "runlimit cleanup: ")
	// A pass whose DELETE and COMMIT were sent before the lock was taken
	// waits at the DELETE, and cannot know whether its COMMIT ran; one
	// that began after waits before sending it. Either is a failed round.
	require.Regexp(t, `\((no rows removed|rows may have been removed), timed out\)`, failure)
	require.Contains(t, failure, "(retrying in 10ms)")
	require.NoError(t, tx.Rollback(context.Background()))

	// The loop carries on once the table is free again: a row that expires
	// now is removed by a later round.
	addCounters(t, db.Pool, "later", 1)
	expireAll(t, db.Pool)
	for {
		line := nextLine(t, stdout)
		if strings.HasSuffix(line, "removed 1 expired row in 1 pass") {
			break
		}
		require.Regexp(t, `removed 0 expired rows in 1 pass$`, line)
	}
	cancel()
	require.Equal(t, 0, exitCode(t, code))
}

func TestCleanupEveryFailsAtOnceWithoutTheSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	_, stderr, code := runCleanupLoop(context.Background(), db, "--every", "1h")
	require.Equal(t, 1, exitCode(t, code), "a first round that fails ends the command")
	require.Contains(t, stderr.String(), `run "runlimit migrate" first`)
}

func TestCleanupFlagValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--batch", "0"}, "--batch is 0, want at least 1"},
		{[]string{"--batch", "-5"}, "--batch is -5, want at least 1"},
		{[]string{"--max-passes", "0"}, "--max-passes is 0, want at least 1"},
		{[]string{"--every", "-1s"}, "--every is -1s, want 0 (one round) or at least 1ms"},
		{[]string{"--every", "1ns"}, "--every is 1ns, want 0 (one round) or at least 1ms"},
		{[]string{"--timeout", "0s"}, "--timeout is 0s, want more than 0 and at most 1m0s"},
		{[]string{"--timeout", "2m"}, "--timeout is 2m0s"},
		{[]string{"--every", "soon"}, `invalid value "soon" for flag -every`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			// Validation comes before the database: this URL is never used.
			args := append([]string{"cleanup", "--database-url", "postgres://127.0.0.1:1/x"}, tt.args...)
			r := execute(t, noEnv, args...)
			require.Equal(t, 2, r.code)
			require.Contains(t, r.stderr, tt.want)
		})
	}
}
