package runlimitfx_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// TestStartFailingBeforeTheModuleLeavesNoPool: when an application fails
// to start before the module's OnStart hook runs (a hook appended before
// it fails, or the start's context is done before fx reaches it), fx runs
// no OnStop for the module. The Runtime had opened its pool from the URL in
// the constructor, and the pool's health-check goroutine (and any
// pool_min_conns connections) stayed for good. The pool is now opened by
// OnStart, so nothing is left.
//
// It does not run in parallel: goleak compares against the goroutines of
// the moment.
func TestStartFailingBeforeTheModuleLeavesNoPool(t *testing.T) {
	db := pgtest.New(t)
	secret := wiring.NewSecret(testSecret)
	boom := errors.New("an earlier hook failed")
	for name, tc := range map[string]struct {
		earlier func(context.Context) error
		ctx     func() context.Context
	}{
		"an earlier hook fails": {
			earlier: func(context.Context) error { return boom },
			ctx:     context.Background,
		},
		"the start's context is done": {
			earlier: func(context.Context) error { return nil },
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			var got provided
			app := fx.New(fx.NopLogger,
				fx.Invoke(func(lc fx.Lifecycle) { lc.Append(fx.Hook{OnStart: tc.earlier}) }),
				fx.Supply(wiring.Config{Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(db.URL + "&pool_min_conns=1"),
					KeySecret: secret, Gate: &memory.Config{MaxKeys: 10}}),
				runlimitfx.Module, fx.Populate(&got))
			require.NoError(t, app.Err())
			require.Error(t, app.Start(tc.ctx()))
			require.ErrorIs(t, got.Runtime.Ready(context.Background()), wiring.ErrNotStarted, "the module's OnStart never ran")
			goleak.VerifyNone(t, before)
		})
	}
}

// TestStartFailingBeforeTheModuleLeavesNoCallback: the module's telemetry
// registered its admission counts' callback with the graph's meter
// provider in the constructor. When the application failed to start
// before the module's OnStart ran, no OnStop unregistered it, and a
// provider that outlives the application (a host's tests share one) kept
// the module's telemetry and ran its callback on every collection. The
// callback is now registered with the first admission it counts.
func TestStartFailingBeforeTheModuleLeavesNoCallback(t *testing.T) {
	t.Parallel()
	mp := newRegistrations(t)
	app := fx.New(fx.NopLogger,
		fx.Invoke(func(lc fx.Lifecycle) {
			lc.Append(fx.Hook{OnStart: func(context.Context) error { return errors.New("an earlier hook failed") }})
		}),
		fx.Supply(wiring.Config{KeySecret: wiring.NewSecret(testSecret), Memory: memory.Config{MaxKeys: 10}}),
		fx.Supply(fx.Annotate(metric.MeterProvider(mp), fx.As(new(metric.MeterProvider)))),
		runlimitfx.Module, fx.Invoke(func(*wiring.Runtime) {}))
	require.NoError(t, app.Err())
	require.Error(t, app.Start(context.Background()))
	require.Zero(t, mp.count(), "a callback stayed registered with the provider")
}
