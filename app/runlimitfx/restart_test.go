package runlimitfx_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// registrations is a meter provider that counts the metric callbacks
// registered with it and not yet unregistered.
type registrations struct {
	metric.MeterProvider
	mu   sync.Mutex
	live int
}

func newRegistrations(t *testing.T) *registrations {
	t.Helper()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return &registrations{MeterProvider: mp}
}

func (r *registrations) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &countingMeter{Meter: r.MeterProvider.Meter(name, opts...), r: r}
}

func (r *registrations) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live
}

type countingMeter struct {
	metric.Meter
	r *registrations
}

func (m *countingMeter) RegisterCallback(f metric.Callback, instruments ...metric.Observable) (metric.Registration, error) {
	reg, err := m.Meter.RegisterCallback(f, instruments...)
	if err != nil {
		return nil, err
	}
	m.r.mu.Lock()
	m.r.live++
	m.r.mu.Unlock()
	return &countedRegistration{Registration: reg, r: m.r}, nil
}

type countedRegistration struct {
	metric.Registration
	r    *registrations
	once sync.Once
}

func (c *countedRegistration) Unregister() error {
	c.once.Do(func() {
		c.r.mu.Lock()
		c.r.live--
		c.r.mu.Unlock()
	})
	return c.Registration.Unregister()
}

// TestStoppedModuleLeavesNoCallbackWithTheProvider: a host whose meter
// provider outlives its applications (the global one, or one its tests
// share) gets back every metric callback the module registered once an
// application stops, fails to start (a migration that fails) or fails to
// be built, so that restarting the application does not pile up
// callbacks, each holding a Telemetry and run on every collection.
func TestStoppedModuleLeavesNoCallbackWithTheProvider(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mp := newRegistrations(t)
	supply := fx.Supply(fx.Annotate(metric.MeterProvider(mp), fx.As(new(metric.MeterProvider))))
	secret := wiring.NewSecret(testSecret)

	for range 2 {
		var limiter *app.Limiter
		var hasher domain.KeyHasher
		fxApp := fxtest.New(t, runlimitfx.Module, supply,
			fx.Supply(wiring.Config{Memory: memory.Config{MaxKeys: 10}, KeySecret: secret}),
			fx.Populate(&limiter, &hasher))
		require.NoError(t, fxApp.Start(ctx))
		require.True(t, check(t, limiter, hasher, loginPolicy(t, "auth.login"), "alice").PermitsRequest())
		require.Positive(t, mp.count(), "the running module's metrics are registered")
		require.NoError(t, fxApp.Stop(ctx))
		require.Zero(t, mp.count(), "a stopped module leaves no callback")
	}

	t.Run("migration fails", func(t *testing.T) {
		t.Parallel()
		mp := newRegistrations(t)
		db := pgtest.NewEmpty(t)
		// A table of the schema's name, of another shape: the migration
		// fails half way.
		_, err := db.Pool.Exec(ctx, "CREATE TABLE runlimit_fixed_windows (id int)")
		require.NoError(t, err)
		fxApp := fxtest.New(t, runlimitfx.Module,
			fx.Supply(fx.Annotate(metric.MeterProvider(mp), fx.As(new(metric.MeterProvider)))),
			fx.Supply(wiring.Config{Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(db.URL),
				Migrate: true, KeySecret: secret, Gate: &memory.Config{MaxKeys: 10}}),
			fx.Invoke(func(*wiring.Runtime) {}))
		require.ErrorContains(t, fxApp.Start(ctx), "migrate")
		require.Zero(t, mp.count(), "a failed start leaves no callback")
	})

	t.Run("the Runtime cannot be built", func(t *testing.T) {
		t.Parallel()
		mp := newRegistrations(t)
		fxApp := fx.New(fx.NopLogger, runlimitfx.Module,
			fx.Supply(fx.Annotate(metric.MeterProvider(mp), fx.As(new(metric.MeterProvider)))),
			fx.Supply(wiring.Config{Memory: memory.Config{MaxKeys: 10}, KeySecret: secret, CleanupBatch: -1}),
			fx.Invoke(func(*wiring.Runtime) {}))
		require.Error(t, fxApp.Err())
		require.Zero(t, mp.count(), "a failed constructor leaves no callback")
	})
}

// TestModuleLeavesNoCallbackWithTheGlobalProvider: the global provider,
// which outlives every application, gets back the module's callbacks
// when an application stops, whether it was set before the module was
// built or only in an OnStart hook (when the module merely asks whether
// one is set, to warn).
func TestModuleLeavesNoCallbackWithTheGlobalProvider(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	ctx := context.Background()
	mp := newRegistrations(t)
	for _, early := range []bool{false, true} {
		var opts []fx.Option
		if early {
			otel.SetMeterProvider(mp)
		} else {
			opts = append(opts, fx.Invoke(func(lc fx.Lifecycle) {
				lc.Append(fx.Hook{OnStart: func(context.Context) error {
					otel.SetMeterProvider(mp)
					return nil
				}})
			}))
		}
		var limiter *app.Limiter
		var hasher domain.KeyHasher
		fxApp := fxtest.New(t, append(opts, runlimitfx.Module, fx.NopLogger,
			fx.Supply(wiring.Config{Memory: memory.Config{MaxKeys: 10}, KeySecret: wiring.NewSecret(testSecret)}),
			fx.Populate(&limiter, &hasher))...)
		require.NoError(t, fxApp.Start(ctx))
		require.True(t, check(t, limiter, hasher, loginPolicy(t, "auth.login"), "alice").PermitsRequest())
		require.NoError(t, fxApp.Stop(ctx))
		require.Zero(t, mp.count(), "early=%t: a stopped module leaves no callback", early)
	}
}
