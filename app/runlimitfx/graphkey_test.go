// The file is not named for the key secret: testify prints its path in
// the leak test, and a window of the test secret would match it.

package runlimitfx_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// requireTestSecretHasher requires that h derives the keys testSecret's
// hasher does.
func requireTestSecretHasher(t *testing.T, h domain.KeyHasher) {
	t.Helper()
	want, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	p := loginPolicy(t, "auth.login")
	require.Equal(t, want.KeyString(p, "user").Bytes(), h.KeyString(p, "user").Bytes())
}

// envWithoutSecret is what wiring.ConfigFromLookup makes of an
// environment that sets no RUNLIMIT_KEY_SECRET.
func envWithoutSecret(t *testing.T) wiring.Config {
	t.Helper()
	cfg, err := wiring.ConfigFromLookup(func(name string) (string, bool) {
		if name == wiring.EnvMemoryMaxKeys {
			return "100", true
		}
		return "", false
	})
	require.NoError(t, err)
	return cfg
}

// TestModuleTakesTheKeySecretFromTheGraph: a Config without a source of
// its own, such as one from the environment, takes the key secret from a
// runlimitfx.KeySecret or a runlimitfx.KeySecretFunc in the graph.
func TestModuleTakesTheKeySecretFromTheGraph(t *testing.T) {
	t.Parallel()
	for name, supply := range map[string]fx.Option{
		"value":  fx.Supply(runlimitfx.KeySecret{Secret: wiring.NewSecret(testSecret)}),
		"source": fx.Supply(runlimitfx.KeySecretFunc(func(context.Context) ([]byte, error) { return []byte(testSecret), nil })),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var hasher domain.KeyHasher
			fxtest.New(t, runlimitfx.Module, fx.Supply(envWithoutSecret(t)), supply, fx.Populate(&hasher)).
				RequireStart().RequireStop()
			requireTestSecretHasher(t, hasher)
		})
	}
}

// TestModuleRejectsTwoKeySecretSources: a secret from two places could
// differ between replicas, so a graph source beside the Config's, or two
// in the graph, fail the application's construction.
func TestModuleRejectsTwoKeySecretSources(t *testing.T) {
	t.Parallel()
	value := fx.Supply(runlimitfx.KeySecret{Secret: wiring.NewSecret(testSecret)})
	source := fx.Supply(runlimitfx.KeySecretFunc(func(context.Context) ([]byte, error) { return []byte(testSecret), nil }))
	for _, tc := range []struct {
		name string
		opts []fx.Option
		want string
	}{
		{"two in the graph", []fx.Option{fx.Supply(envWithoutSecret(t)), value, source},
			"runlimit: invalid config: KeySecret has two sources in the fx graph"},
		{"the Config's and the graph's", []fx.Option{fx.Supply(memoryConfig(t)), value},
			"runlimit: invalid config: KeySecret has two sources: the Config sets one and the fx graph provides another"},
		{"the Config's variable and the graph's", []fx.Option{
			fx.Supply(wiring.Config{Memory: memory.Config{MaxKeys: 10}, SecretEnv: "RUNLIMIT_KEY_SECRET"}), source},
			"runlimit: invalid config: KeySecret has two sources: the Config sets one and the fx graph provides another"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := fx.New(append(tc.opts, fx.NopLogger, runlimitfx.Module, useEverything)...).Err()
			require.ErrorIs(t, err, wiring.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestKeySecretNeverPrints: the graph's key secret, alone and in the
// Params that carry it, prints under no printer.
func TestKeySecretNeverPrints(t *testing.T) {
	t.Parallel()
	secret := runlimitfx.KeySecret{Secret: wiring.NewSecret(testSecret)}
	source := runlimitfx.KeySecretFunc(func(context.Context) ([]byte, error) { return []byte(testSecret), nil })
	secrets := append([][]byte{[]byte(testSecret)}, leakcheck.KeyedStates(t, []byte(testSecret))...)
	for _, tc := range []leakcheck.Case{
		leakcheck.Value("KeySecret", secret),
		leakcheck.Value("zero KeySecret", runlimitfx.KeySecret{}),
		leakcheck.Value("KeySecretFunc", source),
		leakcheck.Value("Params", runlimitfx.Params{Config: memoryConfig(t), KeySecret: secret, KeySecretFunc: source}),
	} {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			tc.Run(t, secrets...)
		})
	}
}

// TestGraphKeySecretSetEmptyIsRefused: a runlimitfx.KeySecret that came
// back empty from the host's secret store is a config error naming the
// key secret, never taken for absent: the environment's secret, valid
// here, must not be used instead.
func TestGraphKeySecretSetEmptyIsRefused(t *testing.T) {
	t.Setenv(wiring.DefaultSecretEnv, testSecret)
	var hasher domain.KeyHasher
	app := fx.New(fx.NopLogger, runlimitfx.Module, fx.Supply(envWithoutSecret(t)),
		fx.Supply(runlimitfx.KeySecret{Secret: wiring.NewSecret("")}), fx.Populate(&hasher))
	var ce *wiring.ConfigError
	require.ErrorAs(t, app.Err(), &ce)
	require.Equal(t, "KeySecret", ce.Field)
	require.True(t, hasher.IsZero())
}

// TestKeySecretSourceGetsABoundedContext: the module calls a secret
// source, the graph's or the Config's, with a context that has a
// deadline, so that a source that honours its context cannot hang
// fx.New on a secret store that never answers.
func TestKeySecretSourceGetsABoundedContext(t *testing.T) {
	t.Parallel()
	for name, withSource := range map[string]func(runlimitfx.KeySecretFunc) []fx.Option{
		"graph": func(f runlimitfx.KeySecretFunc) []fx.Option {
			return []fx.Option{fx.Supply(envWithoutSecret(t)), fx.Supply(f)}
		},
		"config": func(f runlimitfx.KeySecretFunc) []fx.Option {
			cfg := envWithoutSecret(t)
			cfg.KeySecretFunc = f
			return []fx.Option{fx.Supply(cfg)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var bounded, called bool
			source := func(ctx context.Context) ([]byte, error) {
				called = true
				_, bounded = ctx.Deadline()
				return []byte(testSecret), nil
			}
			var hasher domain.KeyHasher
			opts := append([]fx.Option{runlimitfx.Module, fx.Populate(&hasher)}, withSource(source)...)
			fxtest.New(t, opts...).RequireStart().RequireStop()
			require.True(t, called)
			require.True(t, bounded, "the source's context must carry a deadline")
			requireTestSecretHasher(t, hasher)
		})
	}
}
