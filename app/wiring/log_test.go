package wiring_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/ports"
)

// requireNoLeak fails when logs spell any window of any secret.
func requireNoLeak(t *testing.T, logs string, secrets ...[]byte) {
	t.Helper()
	for _, s := range secrets {
		for _, r := range leakcheck.Renderings(s) {
			require.NotContains(t, logs, r, "the logs spell a secret")
		}
	}
}

// openLogged opens a Runtime over a fake host store, its cleanup loop
// driven by the returned ticks and its logs kept in the returned buffer.
func openLogged(t *testing.T) (*wiring.Runtime, *fakeStore, chan time.Time, *testkit.LogBuffer) {
	t.Helper()
	logs := new(testkit.LogBuffer)
	store := newFakeStore(t)
	ticks := make(chan time.Time)
	r, err := wiring.OpenWithTicks(context.Background(), wiring.Config{
		Store: store, KeySecret: wiring.NewSecret(testSecret), Logger: logs.Logger(),
	}, ticks)
	require.NoError(t, err)
	return r, store, ticks, logs
}

// TestRuntimeLogsItsLifeWithoutSecrets: start, the schema migrated, each
// cleanup pass, a cleanup failure without CleanupErrorFunc and stop are
// logged; no record holds the secret, a subject or a key.
func TestRuntimeLogsItsLifeWithoutSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, store, ticks, logs := openLogged(t)

	subject := "alice@example.test"
	p := loginPolicy(t, "auth.login")
	key := r.KeyHasher().KeyString(p, subject)
	_, err := r.Limiter().Check(ctx, domain.NewCheck(p, key))
	require.NoError(t, err)

	// A tick is taken only between passes: after the second, the first
	// pass (which succeeded) is over; the second may see the failure or
	// not, the third surely does, and after the fourth it is logged.
	tick(t, ticks)
	tick(t, ticks)
	store.set(nil, errors.New("redis: READONLY"))
	tick(t, ticks)
	tick(t, ticks)
	require.NoError(t, r.Close(ctx))

	out := logs.String()
	require.Contains(t, out, `level=INFO msg="runlimit: started" backend=store gate=false migrate=false cleanup_interval=1m0s`)
	require.Contains(t, out, `level=DEBUG msg="runlimit: cleanup" store=store removed=0`)
	require.Contains(t, out, `level=WARN msg="runlimit: cleanup failed; retrying at the next tick" store=store removed=0 error="runlimit: cleanup of the store store: redis: READONLY"`)
	require.Contains(t, out, `level=INFO msg="runlimit: stopped" backend=store`)
	sk := key.Bytes()
	requireNoLeak(t, out, []byte(testSecret), []byte(subject), sk[:])
}

// TestCleanupThatRemovedRowsIsLoggedAtInfo: a pass that removed counters is
// news an operator sees with a default handler (INFO); one that found
// nothing to remove, every minute, stays at DEBUG.
func TestCleanupThatRemovedRowsIsLoggedAtInfo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, store, ticks, logs := openLogged(t)
	store.mu.Lock()
	store.removes = 3
	store.mu.Unlock()
	// A tick is taken only between passes: after the second, the first
	// (which removed 3) is over, and the second (which removed none) too
	// after the third.
	tick(t, ticks)
	tick(t, ticks)
	tick(t, ticks)
	require.NoError(t, r.Close(ctx))

	out := logs.String()
	require.Contains(t, out, `level=INFO msg="runlimit: cleanup" store=store removed=3`)
	require.Contains(t, out, `level=DEBUG msg="runlimit: cleanup" store=store removed=0`)
}

// TestCleanupErrorFuncTakesTheFailures: with a CleanupErrorFunc the
// failures go to it and are not logged twice.
func TestCleanupErrorFuncTakesTheFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs testkit.LogBuffer
	store := newFakeStore(t)
	store.set(nil, errors.New("redis: READONLY"))
	errs := make(chan error, 4)
	ticks := make(chan time.Time)
	r, err := wiring.OpenWithTicks(ctx, wiring.Config{
		Store: store, KeySecret: wiring.NewSecret(testSecret), Logger: logs.Logger(),
		CleanupErrorFunc: func(err error) { errs <- err },
	}, ticks)
	require.NoError(t, err)
	tick(t, ticks)
	var ce *wiring.CleanupError
	require.ErrorAs(t, <-errs, &ce)
	require.NoError(t, r.Close(ctx))
	require.NotContains(t, logs.String(), "cleanup failed")
}

func TestPostgresRuntimeLogsMigrationAndFailedStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	var logs testkit.LogBuffer
	r, err := wiring.Open(ctx, wiring.Config{
		Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(db.URL), Migrate: true,
		KeySecret: wiring.NewSecret(testSecret), Logger: logs.Logger(),
	})
	require.NoError(t, err)
	require.NoError(t, r.Close(ctx))
	require.Contains(t, logs.String(), `level=INFO msg="runlimit: schema migrated" backend=postgres duration=`)

	// Nothing listens on port 1: the start fails, and its record names
	// neither the password nor the secret.
	const password = "hunter2-log-password"
	var failed testkit.LogBuffer
	_, err = wiring.Open(ctx, wiring.Config{
		Backend: wiring.BackendPostgres, KeySecret: wiring.NewSecret(testSecret), Logger: failed.Logger(),
		DatabaseURL: wiring.NewSecret("postgres://quotauser:" + password + "@127.0.0.1:1/quotas?connect_timeout=5"),
	})
	require.Error(t, err)
	out := failed.String()
	require.True(t, strings.HasPrefix(out, `level=ERROR msg="runlimit: start failed; the runtime is closed" backend=postgres error=`), out)
	requireNoLeak(t, out, []byte(testSecret), []byte(password))
}

// TestObserverPanicsGoToTheRuntimeLogger: the limiters log a recovered
// observer panic to Config.Logger.
func TestObserverPanicsGoToTheRuntimeLogger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs testkit.LogBuffer
	cfg := memoryConfig(t)
	cfg.Logger = logs.Logger()
	cfg.Observer = app.ObserverFunc(func(app.Event) { panic("observer bug") })
	r, err := wiring.Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(ctx) })
	require.True(t, check(t, r.Limiter(), r.KeyHasher(), loginPolicy(t, "auth.login"), "user").PermitsRequest())
	require.Contains(t, logs.String(), `level=ERROR msg="runlimit: observer panicked; the admission stands" limiter=memory`)
}

// failingClose is a host's store whose Close fails.
type failingClose struct{ *fakeStore }

func (failingClose) Close() error { return errors.New("redis: connection reset") }

// TestStopWithACloseFailureIsAWarning: a Runtime whose store fails to close
// still stops, says so at warning level with the error, and returns it.
func TestStopWithACloseFailureIsAWarning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs testkit.LogBuffer
	store := failingClose{newFakeStore(t)}
	r, err := wiring.New(ctx, wiring.Config{
		Backend:      wiring.BackendStore,
		NewStoreFunc: func(context.Context) (ports.Store, error) { return store, nil },
		KeySecret:    wiring.NewSecret(testSecret),
		Logger:       logs.Logger(),
	})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	require.ErrorContains(t, r.Close(ctx), "connection reset")
	out := logs.String()
	require.Contains(t, out, `level=WARN msg="runlimit: stopped" backend=store error="redis: connection reset"`)
	require.NotContains(t, out, `level=INFO msg="runlimit: stopped"`)
}
