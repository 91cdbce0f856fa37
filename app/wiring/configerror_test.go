package wiring_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/ports"
)

// TestConfigErrorsNeverConsumedQuota: every constructor's configuration
// error matches ports.ErrInvalidConfig, and ports.MayHaveConsumedQuota
// answers false for it, as nothing was built that could consume: a host
// that asks it of any error it meets must not read a bad config as an
// admission that may have counted.
func TestConfigErrorsNeverConsumedQuota(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first := func(_ any, err error) error { return err }
	cases := map[string]error{
		"memory.New":                  first(memory.New(memory.Config{})),
		"postgres.New without pool":   first(postgres.New(nil, postgres.Config{})),
		"postgres.New bad rows":       first(postgres.New(idlePool(t), postgres.Config{RowsPerShard: -1})),
		"app.NewLimiter":              first(app.NewLimiter(nil, app.LimiterConfig{})),
		"otelrunlimit.New":            first(otelrunlimit.New(otelrunlimit.Config{StatsInterval: -1})),
		"wiring.Config.Validate":      wiring.Config{Backend: "redis"}.Validate(),
		"wiring.New store section":    first(wiring.New(ctx, wiring.Config{KeySecret: wiring.NewSecret(testSecret)})),
		"wiring.New short secret":     first(wiring.New(ctx, wiring.Config{Memory: memory.Config{MaxKeys: 1}, KeySecret: wiring.NewSecret("short")})),
		"wiring.ConfigFromLookup":     first(wiring.ConfigFromLookup(lookupOf(map[string]string{wiring.EnvMemoryMaxKeys: "many"}))),
		"runlimitfx.New no lifecycle": first(runlimitfx.New(runlimitfx.Params{})),
	}
	for name, err := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.ErrorIs(t, err, ports.ErrInvalidConfig)
			require.False(t, ports.MayHaveConsumedQuota(err), "%v", err)
		})
	}
}

// TestUnsizedChosenMemorySaysHowItWasChosen: a config that names no
// backend and sets no other backend's fields gets the memory backend;
// refused for having no size, it says so, because the host may have meant
// the postgres backend and left its database URL out, and it names the
// variables that would fix it for a host configured by ConfigFromEnv,
// the first run of which sets only the secret. A config that names the
// memory backend hears what is wrong and the variable that sizes it.
func TestUnsizedChosenMemorySaysHowItWasChosen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := wiring.New(ctx, wiring.Config{KeySecret: wiring.NewSecret(testSecret)})
	var ce *wiring.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Memory.MaxKeys", ce.Field)
	require.EqualError(t, err, "runlimit: invalid config: Memory.MaxKeys is 0, want at least 1"+
		" (Backend is empty and none of DatabaseURL, Pool, Store and NewStoreFunc is set, so the memory backend was chosen;"+
		" from the environment, size it with RUNLIMIT_MEMORY_MAX_KEYS, which has no default, or set RUNLIMIT_DATABASE_URL for PostgreSQL)")

	cfg, err := wiring.ConfigFromLookup(lookupOf(map[string]string{wiring.DefaultSecretEnv: testSecret}))
	require.NoError(t, err)
	_, fromEnv := wiring.New(ctx, cfg)
	require.EqualError(t, fromEnv, ce.Error(), "a host configured by the environment alone hears the same")

	_, err = wiring.New(ctx, wiring.Config{Backend: wiring.BackendMemory, KeySecret: wiring.NewSecret(testSecret)})
	require.EqualError(t, err, "runlimit: invalid config: Memory.MaxKeys is 0, want at least 1"+
		" (from the environment: RUNLIMIT_MEMORY_MAX_KEYS, which has no default)")
}
