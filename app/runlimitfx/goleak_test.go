package runlimitfx_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/goleak"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/ports"
)

// TestStopLeaksNoGoroutine: after OnStop, no goroutine the module started
// (the cleanup loop, a pool opened from a URL and its connections) is
// left, for each backend, and a failed start leaves none either.
//
// It does not run in parallel: goleak compares against the goroutines of
// the moment, and parallel tests wait while it runs.
func TestStopLeaksNoGoroutine(t *testing.T) {
	ctx := context.Background()
	secret := wiring.NewSecret(testSecret)
	cases := []struct {
		name string
		// setup prepares what the case needs before goroutines are
		// counted, such as a test database and its pool, and returns the
		// module's options.
		setup     func(t *testing.T) []fx.Option
		failStart bool
	}{
		{"memory", func(t *testing.T) []fx.Option {
			return []fx.Option{fx.Supply(wiring.Config{Memory: memory.Config{MaxKeys: 10}, KeySecret: secret, CleanupInterval: time.Millisecond})}
		}, false},
		{"postgres from a URL", func(t *testing.T) []fx.Option {
			db := pgtest.New(t)
			return []fx.Option{fx.Supply(wiring.Config{Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(db.URL),
				KeySecret: secret, Gate: &memory.Config{MaxKeys: 10}, CleanupInterval: time.Millisecond})}
		}, false},
		{"postgres on the graph's pool", func(t *testing.T) []fx.Option {
			db := pgtest.New(t)
			return []fx.Option{fx.Supply(wiring.Config{Backend: wiring.BackendPostgres, KeySecret: secret}), fx.Supply(db.Pool)}
		}, false},
		{"a host store", func(t *testing.T) []fx.Option {
			store := newHostStore(t)
			return []fx.Option{fx.Supply(wiring.Config{KeySecret: secret, CleanupInterval: time.Millisecond,
				NewStoreFunc: func(context.Context) (ports.Store, error) { return store, nil }})}
		}, false},
		{"postgres from a URL without the schema", func(t *testing.T) []fx.Option {
			db := pgtest.NewEmpty(t)
			return []fx.Option{fx.Supply(wiring.Config{Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(db.URL), KeySecret: secret})}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.setup(t)
			before := goleak.IgnoreCurrent()
			var got provided
			fxApp := fxtest.New(t, append(opts, runlimitfx.Module, fx.Populate(&got))...)
			err := fxApp.Start(ctx)
			if tc.failStart {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
				require.True(t, check(t, got.Limiter, got.Hasher, loginPolicy(t, "auth.login"), "user").PermitsRequest())
				require.NoError(t, fxApp.Stop(ctx))
			}
			goleak.VerifyNone(t, before)
		})
	}
}
