package wiring_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app/wiring"
)

// lookupOf reads variables from env, as os.LookupEnv would.
func lookupOf(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
}

func TestConfigFromEnvReadsEveryVariable(t *testing.T) {
	t.Parallel()
	url := "postgres://quotauser:hunter2@db.internal/quotas"
	cfg, err := wiring.ConfigFromLookup(lookupOf(map[string]string{
		"RUNLIMIT_BACKEND":                 "postgres",
		"RUNLIMIT_DATABASE_URL":            url,
		"RUNLIMIT_MIGRATE":                 "true",
		"RUNLIMIT_MEMORY_MAX_KEYS":         "50000",
		"RUNLIMIT_MEMORY_SHARDS":           "64",
		"RUNLIMIT_GATE_MAX_KEYS":           "10000",
		"RUNLIMIT_GATE_SHARDS":             "16",
		"RUNLIMIT_POSTGRES_ROWS_PER_SHARD": "8192",
		"RUNLIMIT_POSTGRES_SCHEMA":         "limits",
		"RUNLIMIT_POSTGRES_PROTOCOL":       "optimistic",
		"RUNLIMIT_CLEANUP_INTERVAL":        "30s",
		"RUNLIMIT_CLEANUP_BATCH":           "500",
		"RUNLIMIT_KEY_SECRET":              testSecret,
	}))
	require.NoError(t, err)
	require.Equal(t, wiring.BackendPostgres, cfg.Backend)
	require.Equal(t, url, cfg.DatabaseURL.Reveal())
	require.True(t, cfg.Migrate)
	require.Equal(t, memory.Config{MaxKeys: 50_000, Shards: 64}, cfg.Memory)
	require.Equal(t, &memory.Config{MaxKeys: 10_000, Shards: 16}, cfg.Gate)
	require.Equal(t, 8192, cfg.Postgres.RowsPerShard)
	require.Equal(t, "limits", cfg.Postgres.Schema)
	require.Equal(t, postgres.Optimistic, cfg.Postgres.Protocol)
	require.Equal(t, 30*time.Second, cfg.CleanupInterval)
	require.Equal(t, 500, cfg.CleanupBatch)
	require.Equal(t, testSecret, cfg.KeySecret.Reveal())
	require.NoError(t, cfg.Validate())
}

func TestConfigFromEnvDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := wiring.ConfigFromLookup(lookupOf(map[string]string{
		"RUNLIMIT_KEY_SECRET":      testSecret,
		"RUNLIMIT_MEMORY_MAX_KEYS": "100",
		"RUNLIMIT_BACKEND":         "", // empty is unset
	}))
	require.NoError(t, err)
	want := wiring.Config{Memory: memory.Config{MaxKeys: 100}, KeySecret: cfg.KeySecret}
	require.Equal(t, want, cfg)
	require.Nil(t, cfg.Gate)
}

// TestConfigFromEnvNamesTheVariableNeverTheValue: every unusable variable is
// reported, each as an EnvError naming it, and no error holds a value.
func TestConfigFromEnvNamesTheVariableNeverTheValue(t *testing.T) {
	t.Parallel()
	const tell = "hunter2-value"
	env := map[string]string{
		"RUNLIMIT_BACKEND":           "redis-" + tell,
		"RUNLIMIT_MIGRATE":           "yes-" + tell,
		"RUNLIMIT_MEMORY_MAX_KEYS":   "12x-" + tell,
		"RUNLIMIT_MEMORY_SHARDS":     "1.5-" + tell,
		"RUNLIMIT_GATE_SHARDS":       "4",
		"RUNLIMIT_CLEANUP_INTERVAL":  "often-" + tell,
		"RUNLIMIT_CLEANUP_BATCH":     "all-" + tell,
		"RUNLIMIT_POSTGRES_SCHEMA":   "bad;" + tell,
		"RUNLIMIT_POSTGRES_PROTOCOL": "fast-" + tell,
		"RUNLIMIT_KEY_SECRET":        tell, // too short
	}
	_, err := wiring.ConfigFromLookup(lookupOf(env))
	require.ErrorIs(t, err, wiring.ErrInvalidConfig)
	require.NotContains(t, err.Error(), tell)

	var named []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ee *wiring.EnvError
		require.True(t, errors.As(e, &ee), "%v is an EnvError", e)
		named = append(named, ee.Var)
		require.Contains(t, e.Error(), ee.Var)
	}
	require.ElementsMatch(t, []string{
		"RUNLIMIT_BACKEND", "RUNLIMIT_MIGRATE", "RUNLIMIT_MEMORY_MAX_KEYS", "RUNLIMIT_MEMORY_SHARDS",
		"RUNLIMIT_GATE_SHARDS", "RUNLIMIT_CLEANUP_INTERVAL", "RUNLIMIT_CLEANUP_BATCH", "RUNLIMIT_POSTGRES_SCHEMA",
		"RUNLIMIT_POSTGRES_PROTOCOL", "RUNLIMIT_KEY_SECRET",
	}, named)
}

// TestConfigFromEnvLeavesAnUnsetSecretToTheHost: without
// RUNLIMIT_KEY_SECRET the environment names no source of the secret, so a
// host can supply one another way; a Config left without any source fails
// when the Runtime is built, naming the variable it read.
func TestConfigFromEnvLeavesAnUnsetSecretToTheHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := wiring.ConfigFromLookup(lookupOf(map[string]string{"RUNLIMIT_MEMORY_MAX_KEYS": "100"}))
	require.NoError(t, err)
	require.True(t, cfg.KeySecret.IsZero())
	require.Empty(t, cfg.SecretEnv)

	withFunc := cfg
	withFunc.KeySecretFunc = func(context.Context) ([]byte, error) { return []byte(testSecret), nil }
	r, err := wiring.Open(ctx, withFunc)
	require.NoError(t, err)
	requireHasherOf(t, r.KeyHasher())
	require.NoError(t, r.Close(ctx))

	// With no source, the Runtime reads the variable; one that is unset
	// fails it (SecretEnv stands for RUNLIMIT_KEY_SECRET, which another
	// test of this process may set).
	none := cfg
	none.SecretEnv = "RUNLIMIT_APP_TEST_UNSET_SECRET"
	_, err = wiring.Open(ctx, none)
	var ce *wiring.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "runlimit: invalid config: SecretEnv names environment variable RUNLIMIT_APP_TEST_UNSET_SECRET, which is not set (set it to a secret of at least 32 bytes, or give Config.KeySecret or KeySecretFunc)", err.Error())
}

// TestConfigFromEnvRejectsAShortSecret: a secret that is set is the
// helper's to check.
func TestConfigFromEnvRejectsAShortSecret(t *testing.T) {
	t.Parallel()
	_, err := wiring.ConfigFromLookup(lookupOf(map[string]string{"RUNLIMIT_KEY_SECRET": "short"}))
	var ee *wiring.EnvError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, "RUNLIMIT_KEY_SECRET", ee.Var)
	require.ErrorIs(t, err, wiring.ErrInvalidConfig)
}

// TestConfigFromEnvReadsTheProcessEnvironment cannot run in parallel: it
// sets variables every process-wide reader would see.
func TestConfigFromEnvReadsTheProcessEnvironment(t *testing.T) {
	t.Setenv("RUNLIMIT_KEY_SECRET", testSecret)
	t.Setenv("RUNLIMIT_MEMORY_MAX_KEYS", "7")
	t.Setenv("RUNLIMIT_MEMORY_SHARDS", "") // ExampleConfigFromEnv leaves "many" behind
	t.Setenv("RUNLIMIT_CLEANUP_INTERVAL", "")
	cfg, err := wiring.ConfigFromEnv()
	require.NoError(t, err)
	require.Equal(t, 7, cfg.Memory.MaxKeys)
	require.Equal(t, testSecret, cfg.KeySecret.Reveal())
}

// TestConfigFromEnvRejectsValuesOutOfRange: a whole number that no field
// takes (negative, too large for an int, above a store's maximum) or a
// cleanup interval below the shortest is the variable's error, naming it,
// not a field's error at start that an operator must map back to a
// variable; no error repeats the value.
func TestConfigFromEnvRejectsValuesOutOfRange(t *testing.T) {
	t.Parallel()
	huge := "92233720368547758079"
	for _, tc := range []struct{ name, value, reason string }{
		{"RUNLIMIT_MEMORY_MAX_KEYS", "-5", "is negative"},
		{"RUNLIMIT_MEMORY_MAX_KEYS", huge, "is too large"},
		{"RUNLIMIT_MEMORY_SHARDS", "-17", "is negative"},
		{"RUNLIMIT_MEMORY_SHARDS", "1000000000", "is more than"},
		{"RUNLIMIT_GATE_MAX_KEYS", "0", "is below 1"},
		{"RUNLIMIT_GATE_MAX_KEYS", "-3", "is negative"},
		{"RUNLIMIT_POSTGRES_ROWS_PER_SHARD", "-4096", "is negative"},
		{"RUNLIMIT_POSTGRES_ROWS_PER_SHARD", "65537", "is more than 65536"},
		{"RUNLIMIT_CLEANUP_BATCH", "-29", "is negative"},
		{"RUNLIMIT_CLEANUP_BATCH", "-" + huge, "is negative"},
		{"RUNLIMIT_CLEANUP_INTERVAL", "1ns", "is shorter than 1ms"},
		{"RUNLIMIT_CLEANUP_INTERVAL", "999us", "is shorter than 1ms"},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			t.Parallel()
			_, err := wiring.ConfigFromLookup(lookupOf(map[string]string{tc.name: tc.value}))
			var ee *wiring.EnvError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, tc.name, ee.Var)
			require.Contains(t, ee.Reason, tc.reason)
			require.ErrorIs(t, err, wiring.ErrInvalidConfig)
			require.NotContains(t, err.Error(), strings.TrimPrefix(tc.value, "-"))
		})
	}
	// The edges of each range are taken.
	cfg, err := wiring.ConfigFromLookup(lookupOf(map[string]string{
		"RUNLIMIT_MEMORY_MAX_KEYS": "1", "RUNLIMIT_MEMORY_SHARDS": "0", "RUNLIMIT_GATE_MAX_KEYS": "1",
		"RUNLIMIT_POSTGRES_ROWS_PER_SHARD": "65536", "RUNLIMIT_CLEANUP_BATCH": "0", "RUNLIMIT_CLEANUP_INTERVAL": "1ms",
	}))
	require.NoError(t, err)
	require.Equal(t, 65536, cfg.Postgres.RowsPerShard)
	require.Equal(t, time.Millisecond, cfg.CleanupInterval)
	cfg, err = wiring.ConfigFromLookup(lookupOf(map[string]string{"RUNLIMIT_CLEANUP_INTERVAL": "-1ns"}))
	require.NoError(t, err)
	require.Negative(t, cfg.CleanupInterval, "a negative interval turns the loop off")
}

// TestSecretsWithSurroundingWhitespaceAreRefused: a key secret or database
// URL read from the environment with whitespace at either end, as a file
// ending in a newline leaves it, is refused naming the variable: a secret
// kept with its newline on one replica and without it on another gives
// them different keys, and counters of their own in a shared store,
// silently. Neither the value nor the secret is repeated.
func TestSecretsWithSurroundingWhitespaceAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ label, name, value string }{
		{"secret/newline_after", "RUNLIMIT_KEY_SECRET", testSecret + "\n"},
		{"secret/space_before", "RUNLIMIT_KEY_SECRET", " " + testSecret},
		{"secret/crlf_after", "RUNLIMIT_KEY_SECRET", testSecret + "\r\n"},
		{"secret/tab_before", "RUNLIMIT_KEY_SECRET", "\t" + testSecret},
		{"url/newline_after", "RUNLIMIT_DATABASE_URL", "postgres://u:hunter2-pw@db.internal/app\n"},
		{"url/space_before", "RUNLIMIT_DATABASE_URL", " postgres://u:hunter2-pw@db.internal/app"},
	} {
		t.Run(tc.label, func(t *testing.T) {
			t.Parallel()
			_, err := wiring.ConfigFromLookup(lookupOf(map[string]string{tc.name: tc.value}))
			var ee *wiring.EnvError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, tc.name, ee.Var)
			require.Contains(t, ee.Reason, "whitespace")
			require.NotContains(t, err.Error(), strings.TrimSpace(tc.value))
			require.NotContains(t, err.Error(), "hunter2")
		})
	}

	// Config.SecretEnv, read by the Runtime itself, is held to the same
	// rule.
	for _, v := range []string{testSecret + "\n", " " + testSecret} {
		_, err := wiring.New(context.Background(), wiring.Config{Memory: memory.Config{MaxKeys: 1}, SecretEnv: setEnv(t, v)})
		var ce *wiring.ConfigError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "SecretEnv", ce.Field)
		require.Contains(t, ce.Reason, "whitespace")
		require.NotContains(t, err.Error(), testSecret)
	}
	// Whitespace inside is the secret's own.
	inner := "app test secret with spaces inside it"
	cfg, err := wiring.ConfigFromLookup(lookupOf(map[string]string{"RUNLIMIT_KEY_SECRET": inner}))
	require.NoError(t, err)
	require.Equal(t, inner, cfg.KeySecret.Reveal())
}
