package wiring_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
)

// TestCrashProbeRuntime opens a Runtime from a DatabaseURL to a throwaway
// cluster it stops and restarts, as adapters/postgres's TestCrashProbe
// does (same environment variables; skipped without them): Start while the
// server is down fails with a typed error and leaves nothing running, Start
// once it is up succeeds, and Ready follows the server across a restart.
func TestCrashProbeRuntime(t *testing.T) {
	url, start, stop := os.Getenv("RUNLIMIT_CRASH_URL"), os.Getenv("RUNLIMIT_CRASH_START"), os.Getenv("RUNLIMIT_CRASH_STOP")
	if url == "" || start == "" || stop == "" {
		t.Skip("the crash probe needs RUNLIMIT_CRASH_URL, _START and _STOP (a throwaway cluster)")
	}
	ctx := context.Background()
	run := func(cmd string) {
		for i := 0; ; i++ {
			out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
			if err == nil {
				return
			}
			require.Less(t, i, 100, "%s: %s", cmd, out)
			time.Sleep(50 * time.Millisecond)
		}
	}
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	dbName := fmt.Sprintf("crashwiring_%d", time.Now().UnixNano())
	_, err = admin.Exec(ctx, "CREATE DATABASE "+dbName)
	require.NoError(t, err)
	_ = admin.Close(ctx)
	i := strings.LastIndex(url, "/")
	dbURL := url[:i+1] + dbName
	// Trust auth never asks for it: the password is there to be looked
	// for in the errors.
	const password = "crash-probe-password"
	secretURL := strings.Replace(dbURL, "postgres://postgres@", "postgres://postgres:"+password+"@", 1)
	require.Contains(t, secretURL, password)

	cfg := func(migrate bool, query string) wiring.Config {
		return wiring.Config{Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(secretURL + query),
			KeySecret: wiring.NewSecret(testSecret), Migrate: migrate,
			Postgres: postgres.Config{AcquireTimeout: time.Second, OperationTimeout: time.Second}}
	}
	waitUp := func() time.Time {
		for {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			conn, err := pgx.Connect(cctx, dbURL)
			if err == nil {
				_ = conn.Close(cctx)
				cancel()
				return time.Now()
			}
			cancel()
			time.Sleep(5 * time.Millisecond)
		}
	}

	run(stop)
	// pool_min_conns makes the pool connect in the background as it opens.
	for _, c := range []struct {
		migrate bool
		query   string
	}{{false, ""}, {true, ""}, {false, "?pool_min_conns=2"}, {true, "?pool_min_conns=2"}} {
		migrate := c.migrate
		before := goleak.IgnoreCurrent()
		r, err := wiring.New(ctx, cfg(migrate, c.query))
		require.NoError(t, err)
		_, err = r.Limiter().Check(ctx, domain.NewCheck(loginPolicy(t, "crash.login"), r.KeyHasher().KeyString(loginPolicy(t, "crash.login"), "s")))
		require.ErrorIs(t, err, wiring.ErrNotStarted)
		began := time.Now()
		err = r.Start(ctx)
		took := time.Since(began)
		require.Error(t, err)
		var notReady *wiring.NotReadyError
		var dbErr *postgres.DatabaseError
		t.Logf("Start while down (migrate=%v%s) took %v: %T: %v", migrate, c.query, took, err, err)
		if !migrate {
			require.ErrorAs(t, err, &notReady)
		}
		require.ErrorAs(t, err, &dbErr)
		require.NotContains(t, err.Error(), password)
		require.NotContains(t, fmt.Sprintf("%+v %#v", err, err), password)
		require.ErrorIs(t, r.Ready(ctx), wiring.ErrClosed)
		// A failed Start closed the Runtime: starting it again, even once
		// the server is back, is refused; a new one is built.
		require.ErrorIs(t, r.Start(ctx), wiring.ErrClosed)
		_, err = r.Limiter().Check(ctx, domain.NewCheck(loginPolicy(t, "crash.login"), r.KeyHasher().KeyString(loginPolicy(t, "crash.login"), "s")))
		require.Error(t, err)
		t.Logf("a check after the failed Start: %v", err)
		goleak.VerifyNone(t, before)
	}

	run(start)
	up := waitUp()
	before := goleak.IgnoreCurrent()
	r, err := wiring.Open(ctx, cfg(true, ""))
	require.NoError(t, err)
	t.Logf("Open after up: %v after the first connection", time.Since(up))
	p := loginPolicy(t, "crash.login")
	check := domain.NewCheck(p, r.KeyHasher().KeyString(p, "subject"))
	_, err = r.Limiter().Check(ctx, check)
	require.NoError(t, err)
	require.NoError(t, r.Ready(ctx))

	for _, mode := range []string{"fast", "kill9"} {
		if mode == "fast" {
			run(stop)
		} else {
			b, err := os.ReadFile(os.Getenv("RUNLIMIT_CRASH_PIDFILE"))
			require.NoError(t, err)
			var pid int
			_, err = fmt.Sscan(strings.SplitN(string(b), "\n", 2)[0], &pid)
			require.NoError(t, err)
			require.NoError(t, exec.Command("kill", "-9", fmt.Sprint(pid)).Run())
			time.Sleep(200 * time.Millisecond)
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := r.Ready(rctx)
		cancel()
		var notReady *wiring.NotReadyError
		require.ErrorAs(t, err, &notReady, "Ready while the server is down (%s)", mode)
		require.NotContains(t, err.Error(), password)
		_, cerr := r.Limiter().Check(ctx, check)
		require.Error(t, cerr)
		require.False(t, errors.Is(cerr, wiring.ErrNotStarted))
		t.Logf("%s: Ready while down: %v; a check: %v", mode, err, cerr)
		run(start)
		up := waitUp()
		var readyAt time.Time
		attempts := 0
		for {
			attempts++
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := r.Ready(rctx)
			cancel()
			if err == nil {
				readyAt = time.Now()
				break
			}
			t.Logf("%s: Ready %v after the first connection: %v", mode, time.Since(up), err)
			require.Less(t, time.Since(up), 30*time.Second, "never ready again: %v", err)
			time.Sleep(5 * time.Millisecond)
		}
		_, err = r.Limiter().Check(ctx, check)
		require.NoError(t, err)
		t.Logf("%s: Ready again %v after the first connection (%d probes); a check then succeeded", mode, readyAt.Sub(up), attempts)
	}
	require.NoError(t, r.Close(ctx))
	goleak.VerifyNone(t, before)
}
