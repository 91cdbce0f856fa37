package runlimitfx_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/ports"
)

// provided is what Module puts in the graph.
type provided struct {
	fx.In

	Runtime     *wiring.Runtime
	Limiter     *app.Limiter
	PortLimiter ports.Limiter
	Hasher      domain.KeyHasher
}

func TestModuleMemory(t *testing.T) {
	t.Parallel()
	var got provided
	fxApp := fxtest.New(t, runlimitfx.Module, fx.Supply(memoryConfig(t)), fx.Populate(&got)).RequireStart()

	require.Same(t, got.Runtime.Limiter(), got.Limiter)
	require.Same(t, got.Limiter, got.PortLimiter)
	want, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	p := loginPolicy(t, "auth.login")
	require.Equal(t, want.KeyString(p, "user").Bytes(), got.Hasher.KeyString(p, "user").Bytes())

	ctx := context.Background()
	checks := []domain.Check{domain.NewCheck(p, got.Hasher.KeyString(p, "user"))}
	for range 2 {
		bd, err := got.PortLimiter.CheckAll(ctx, checks)
		require.NoError(t, err)
		require.True(t, bd.PermitsRequest())
	}
	bd, err := got.PortLimiter.CheckAll(ctx, checks)
	require.NoError(t, err)
	require.False(t, bd.PermitsRequest())

	fxApp.RequireStop()
	_, err = got.Limiter.Check(ctx, checks[0])
	require.ErrorIs(t, err, memory.ErrClosed, "OnStop closes the store")
}

func TestModulePostgresFromURL(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	var got provided
	fxApp := fxtest.New(t, runlimitfx.Module,
		fx.Supply(wiring.Config{
			Backend:     wiring.BackendPostgres,
			DatabaseURL: wiring.NewSecret(db.URL),
			Migrate:     true,
			SecretEnv:   setEnv(t, testSecret),
		}),
		fx.Populate(&got),
	).RequireStart()

	p := loginPolicy(t, "auth.login")
	require.True(t, check(t, got.Limiter, got.Hasher, p, "user").PermitsRequest())
	require.Equal(t, 1, countRows(t, db), "OnStart migrated the database at DatabaseURL")

	fxApp.RequireStop()
	_, err := got.Limiter.Check(context.Background(), domain.NewCheck(p, got.Hasher.KeyString(p, "user")))
	require.ErrorIs(t, err, postgres.ErrClosed, "OnStop closes the store (and the pool: see TestStopLeaksNoGoroutine)")
}

// TestModulePostgresBorrowsTheGraphPool: without a URL, the module uses the
// host's pool and leaves it open.
func TestModulePostgresBorrowsTheGraphPool(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	var got provided
	fxApp := fxtest.New(t, runlimitfx.Module,
		fx.Supply(wiring.Config{Backend: wiring.BackendPostgres, SecretEnv: setEnv(t, testSecret)}),
		fx.Supply(db.Pool),
		fx.Populate(&got),
	).RequireStart()

	p := loginPolicy(t, "auth.login")
	require.True(t, check(t, got.Limiter, got.Hasher, p, "user").PermitsRequest())

	fxApp.RequireStop()
	_, err := got.Limiter.Check(context.Background(), domain.NewCheck(p, got.Hasher.KeyString(p, "user")))
	require.ErrorIs(t, err, postgres.ErrClosed, "OnStop closes the store")
	require.Equal(t, 1, countRows(t, db), "the host's pool still works after OnStop")
}

// TestModuleMemoryIgnoresTheGraphPool: a pool in the graph does not turn the
// memory backend into something else, nor is it used.
func TestModuleMemoryIgnoresTheGraphPool(t *testing.T) {
	t.Parallel()
	pool := idlePool(t)

	var got provided
	// The pool reaches no server: a module that used it could not start.
	fxApp := fxtest.New(t, runlimitfx.Module, fx.Supply(memoryConfig(t)), fx.Supply(pool), fx.Populate(&got)).RequireStart()
	require.True(t, check(t, got.Limiter, got.Hasher, loginPolicy(t, "auth.login"), "user").PermitsRequest())
	fxApp.RequireStop()
}

// newFailingApp builds an fx application whose Runlimit is constructed,
// quietly, so that its error can be inspected.
func newFailingApp(cfg wiring.Config, more ...fx.Option) *fx.App {
	return fx.New(append([]fx.Option{fx.NopLogger, runlimitfx.Module, fx.Supply(cfg), fx.Invoke(func(*app.Limiter) {})}, more...)...)
}

func TestModuleRejectsAShortSecret(t *testing.T) {
	t.Parallel()
	const shortSecret = "only-twenty-bytes-xy"
	env := setEnv(t, shortSecret)
	fxApp := newFailingApp(wiring.Config{Memory: memory.Config{MaxKeys: 1}, SecretEnv: env})

	err := fxApp.Err()
	var ce *wiring.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "SecretEnv", ce.Field)
	require.ErrorIs(t, err, wiring.ErrInvalidConfig)
	require.Contains(t, err.Error(), env)
	require.NotContains(t, err.Error(), shortSecret)
}

func TestModuleRejectsAMissingSecret(t *testing.T) {
	t.Parallel()
	fxApp := newFailingApp(wiring.Config{Memory: memory.Config{MaxKeys: 1}, SecretEnv: "RUNLIMIT_APP_TEST_NEVER_SET"})
	var ce *wiring.ConfigError
	require.ErrorAs(t, fxApp.Err(), &ce)
	require.Equal(t, "SecretEnv", ce.Field)
}

func TestModuleRejectsAnInvalidConfig(t *testing.T) {
	t.Parallel()
	env := setEnv(t, testSecret)
	for _, cfg := range []wiring.Config{
		{Backend: "redis", SecretEnv: env},
		{Backend: wiring.BackendPostgres, SecretEnv: env}, // no URL, no pool in the graph
		{SecretEnv: env}, // memory without MaxKeys
	} {
		err := newFailingApp(cfg).Err()
		require.ErrorIs(t, err, wiring.ErrInvalidConfig)
	}
}
