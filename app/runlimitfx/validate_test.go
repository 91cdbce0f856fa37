package runlimitfx_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// useEverything asks the graph for every result of the module.
var useEverything = fx.Invoke(func(*wiring.Runtime, *app.Limiter, ports.Limiter, domain.KeyHasher, runlimitfx.ReadyFunc) {})

// TestValidateApp: for each backend the graph is complete, checked by
// fx.ValidateApp without running a constructor; and a graph without a
// Config is reported, so the check can fail.
func TestValidateApp(t *testing.T) {
	t.Parallel()
	secret := wiring.NewSecret(testSecret)
	noPool := func() *pgxpool.Pool { panic("ValidateApp runs no constructor") }
	tests := map[string][]fx.Option{
		"memory": {fx.Supply(wiring.Config{Memory: memoryConfig(t).Memory, KeySecret: secret})},
		"postgres from a URL": {fx.Supply(wiring.Config{Backend: wiring.BackendPostgres,
			DatabaseURL: wiring.NewSecret("postgres://runlimit@db.internal/app"), KeySecret: secret})},
		"postgres on the graph's pool": {fx.Supply(wiring.Config{Backend: wiring.BackendPostgres, KeySecret: secret}),
			fx.Provide(noPool)},
		"a store in the graph": {fx.Supply(wiring.Config{KeySecret: secret}),
			fx.Provide(func() ports.Store { panic("ValidateApp runs no constructor") })},
		"the store backend on the graph's store": {fx.Supply(wiring.Config{Backend: wiring.BackendStore, KeySecret: secret}),
			fx.Provide(func() ports.Store { panic("ValidateApp runs no constructor") })},
		"memory named beside a graph store": {fx.Supply(wiring.Config{Backend: wiring.BackendMemory,
			Memory: memoryConfig(t).Memory, KeySecret: secret}),
			fx.Provide(func() ports.Store { panic("ValidateApp runs no constructor") })},
		"key secret from the graph": {fx.Supply(wiring.Config{Memory: memoryConfig(t).Memory}),
			fx.Provide(func() runlimitfx.KeySecret { panic("ValidateApp runs no constructor") })},
		"key secret source from the graph": {fx.Supply(wiring.Config{Memory: memoryConfig(t).Memory}),
			fx.Provide(func() runlimitfx.KeySecretFunc { panic("ValidateApp runs no constructor") })},
		"a store from NewStoreFunc": {fx.Supply(wiring.Config{KeySecret: secret,
			NewStoreFunc: func(context.Context) (ports.Store, error) { return nil, nil }})},
		"environment config and graph observers": {fx.Provide(wiring.ConfigFromEnv),
			fx.Provide(fx.Annotate(func() app.Observer { return app.ObserverFunc(func(app.Event) {}) },
				fx.ResultTags(`group:"runlimit.observers"`)))},
	}
	for name, opts := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, fx.ValidateApp(append(opts, fx.NopLogger, runlimitfx.Module, useEverything)...))
		})
	}

	err := fx.ValidateApp(fx.NopLogger, runlimitfx.Module, useEverything)
	require.ErrorContains(t, err, "missing type: wiring.Config")
}
