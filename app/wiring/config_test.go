package wiring_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/ports"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	// A pool that never connects: Validate only looks at whether it is set.
	pool := idlePool(t)

	tests := []struct {
		name      string
		cfg       wiring.Config
		wantField string // "" when valid
	}{
		{"zero value: memory backend", wiring.Config{}, ""},
		{"memory", wiring.Config{Backend: wiring.BackendMemory}, ""},
		{"postgres with a URL", wiring.Config{Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret("postgres://x")}, ""},
		{"postgres with a pool", wiring.Config{Backend: wiring.BackendPostgres, Pool: wiring.BorrowPool(pool)}, ""},
		{"postgres with a gate", wiring.Config{Backend: wiring.BackendPostgres, Pool: wiring.BorrowPool(pool), Gate: &memory.Config{MaxKeys: 1}}, ""},
		{"loop off", wiring.Config{CleanupInterval: -1}, ""},
		{"unknown backend", wiring.Config{Backend: "redis"}, "Backend"},
		{"backend is case-sensitive", wiring.Config{Backend: "Postgres"}, "Backend"},
		{"gate on memory", wiring.Config{Gate: &memory.Config{MaxKeys: 1}}, "Gate"},
		{"postgres without URL or pool", wiring.Config{Backend: wiring.BackendPostgres}, "DatabaseURL"},
		{"postgres with URL and pool", wiring.Config{Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret("postgres://x"), Pool: wiring.BorrowPool(pool)}, "DatabaseURL"},
		{"negative batch", wiring.Config{CleanupBatch: -1}, "CleanupBatch"},
		{"an interval of 1 ns would run passes back to back", wiring.Config{CleanupInterval: time.Nanosecond}, "CleanupInterval"},
		{"just under the minimum interval", wiring.Config{CleanupInterval: wiring.MinCleanupInterval - 1}, "CleanupInterval"},
		{"the minimum interval", wiring.Config{CleanupInterval: wiring.MinCleanupInterval}, ""},
		// A database URL is never ignored: it selects the postgres backend,
		// or is refused beside another one.
		{"a URL alone selects postgres", wiring.Config{DatabaseURL: wiring.NewSecret("postgres://x"), Gate: &memory.Config{MaxKeys: 1}}, ""},
		{"a pool alone selects postgres", wiring.Config{Pool: wiring.BorrowPool(pool)}, ""},
		{"a URL and a pool, no backend", wiring.Config{DatabaseURL: wiring.NewSecret("postgres://x"), Pool: wiring.BorrowPool(pool)}, "DatabaseURL"},
		{"a URL with the memory backend", wiring.Config{Backend: wiring.BackendMemory, DatabaseURL: wiring.NewSecret("postgres://x")}, "DatabaseURL"},
		{"a pool with the memory backend", wiring.Config{Backend: wiring.BackendMemory, Pool: wiring.BorrowPool(pool)}, "DatabaseURL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate()
			if tt.wantField == "" {
				require.NoError(t, err)
				return
			}
			var ce *wiring.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tt.wantField, ce.Field)
			require.ErrorIs(t, err, wiring.ErrInvalidConfig)
			require.Contains(t, err.Error(), tt.wantField)
		})
	}
}

func TestConfigErrorText(t *testing.T) {
	t.Parallel()
	err := wiring.Config{Backend: "redis"}.Validate()
	require.EqualError(t, err, `runlimit: invalid config: Backend is "redis", want "memory", "postgres" or "store"`)
}

// TestOpenNamesStoreConfigFields: the stores' own config errors come back
// naming the app Config field, and still match the store's error.
func TestOpenNamesStoreConfigFields(t *testing.T) {
	t.Parallel()
	secretEnv := setEnv(t, testSecret)
	tests := []struct {
		name      string
		cfg       wiring.Config
		wantField string
		wantErr   error
	}{
		{"memory without MaxKeys", wiring.Config{}, "Memory.MaxKeys", memory.ErrInvalidConfig},
		{"memory shards", wiring.Config{Memory: memory.Config{MaxKeys: 4, Shards: 5}}, "Memory.Shards", memory.ErrInvalidConfig},
		{"gate shards", wiring.Config{Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret("postgres://nobody@127.0.0.1:1/none"),
			Gate: &memory.Config{MaxKeys: 1, Shards: -1}}, "Gate.Shards", memory.ErrInvalidConfig},
		{"postgres rows per shard", wiring.Config{Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret("postgres://nobody@127.0.0.1:1/none"),
			Postgres: postgres.Config{RowsPerShard: postgres.MaxRowsPerShard + 1}}, "Postgres.RowsPerShard", postgres.ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.SecretEnv = secretEnv
			r, err := wiring.Open(context.Background(), tt.cfg)
			require.Nil(t, r)
			var ce *wiring.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tt.wantField, ce.Field)
			require.ErrorIs(t, err, wiring.ErrInvalidConfig)
			require.ErrorIs(t, err, tt.wantErr)
			require.Contains(t, err.Error(), tt.wantField)
		})
	}
}

func TestOpenKeepsTheDatabaseURLOutOfErrors(t *testing.T) {
	t.Parallel()
	// Not a valid port: the URL cannot be parsed.
	url := "postgres://quotauser:hunter2-password@db.internal.example:notaport/quotas"
	_, err := wiring.Open(context.Background(), wiring.Config{
		Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(url), SecretEnv: setEnv(t, testSecret),
	})
	var ce *wiring.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "DatabaseURL", ce.Field)
	require.ErrorIs(t, err, wiring.ErrInvalidConfig)
	for _, private := range []string{"hunter2", "db.internal", "quotauser", "quotas"} {
		require.NotContains(t, err.Error(), private)
	}
}

func TestOpenRequiresTheSecret(t *testing.T) {
	t.Parallel()
	const shortSecret = "short-secret-31-bytes-long-abcd"
	require.Len(t, shortSecret, 31)
	tests := []struct {
		name string
		env  func(t *testing.T) string
		want string
	}{
		{"unset", func(*testing.T) string { return "RUNLIMIT_APP_TEST_NEVER_SET" }, "which is not set"},
		{"empty", func(t *testing.T) string { return setEnv(t, "") }, "which is set but empty"},
		{"one byte short", func(t *testing.T) string { return setEnv(t, shortSecret) }, "fewer than 32 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := tt.env(t)
			_, err := wiring.Open(context.Background(), wiring.Config{
				Memory: memory.Config{MaxKeys: 1}, SecretEnv: env,
			})
			var ce *wiring.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "SecretEnv", ce.Field)
			require.ErrorIs(t, err, wiring.ErrInvalidConfig)
			require.Contains(t, err.Error(), env)
			require.Contains(t, err.Error(), tt.want)
			require.NotContains(t, err.Error(), shortSecret)
		})
	}
}

// Every constructor's configuration error matches the one contract in
// ports, so a host needs a single errors.Is whatever it builds.
func TestEveryConfigErrorIsThePortsContract(t *testing.T) {
	t.Parallel()
	_, memErr := memory.New(memory.Config{})
	_, pgErr := postgres.New(idlePool(t), postgres.Config{RowsPerShard: -1})
	_, limErr := app.NewLimiter(nil, app.LimiterConfig{})
	_, httpErr := httplimit.NewMiddleware(httplimit.Config{})
	for name, err := range map[string]error{
		"memory.New":             memErr,
		"postgres.New":           pgErr,
		"app.NewLimiter":         limErr,
		"httplimit":              httpErr,
		"wiring.Config.Validate": wiring.Config{Backend: "redis"}.Validate(),
	} {
		require.ErrorIs(t, err, ports.ErrInvalidConfig, name)
	}
}

// A backend that is no plain word, such as a database URL set as the
// backend by mistake, is not repeated: its password must not reach logs.
func TestConfigErrorDoesNotRepeatAURLAsBackend(t *testing.T) {
	t.Parallel()
	const password = "b4ckend-pa55"
	for _, backend := range []wiring.Backend{"postgres://u:" + password + "@db/x", "host=db password=" + password, wiring.Backend(strings.Repeat("s", 40))} {
		err := wiring.Config{Backend: backend}.Validate()
		var ce *wiring.ConfigError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "Backend", ce.Field)
		require.NotContains(t, err.Error(), password)
		require.NotContains(t, err.Error(), string(backend))
		require.Contains(t, err.Error(), `want "memory", "postgres" or "store"`)
		leakcheck.Check(t, "backend error", err, []byte(password))
	}
}
