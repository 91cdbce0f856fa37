package wiring_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/internal/testkit"
)

// The errors of opening a Runtime from a database URL hold no password in
// any field a printer reaches: a URL that does not parse, and a server that
// cannot be reached, with and without migrating at start.
func TestOpenErrorsHoldNoPassword(t *testing.T) {
	t.Parallel()
	const password = "hunter2-password"
	for name, cfg := range map[string]wiring.Config{
		"invalid URL":          {DatabaseURL: wiring.NewSecret("postgres://quotauser:" + password + "@db.internal.example:notaport/quotas")},
		"unreachable":          {DatabaseURL: wiring.NewSecret("postgres://quotauser:" + password + "@127.0.0.1:1/quotas?connect_timeout=5")},
		"unreachable, migrate": {DatabaseURL: wiring.NewSecret("postgres://quotauser:" + password + "@127.0.0.1:1/quotas?connect_timeout=5"), Migrate: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg.Backend, cfg.SecretEnv = wiring.BackendPostgres, setEnv(t, testSecret)
			cfg.Postgres.AcquireTimeout = 5 * time.Second
			_, err := wiring.Open(context.Background(), cfg)
			require.Error(t, err)
			var connectErr *pgconn.ConnectError
			var parseErr *pgconn.ParseConfigError
			require.False(t, errors.As(err, &connectErr), "a *pgconn.ConnectError is kept")
			require.False(t, errors.As(err, &parseErr), "a *pgconn.ParseConfigError is kept")
			leakcheck.Check(t, name, err, []byte(password))
		})
	}
}

// Postgres.Schema reaches both the migrations and the store, and
// Postgres.Protocol the store, which the start record names.
func TestOpenUsesTheConfiguredSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	var logs testkit.LogBuffer
	r, err := wiring.Open(context.Background(), wiring.Config{
		Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(db.URL), SecretEnv: setEnv(t, testSecret),
		Postgres: postgres.Config{Schema: "limits", Protocol: postgres.Optimistic}, Migrate: true, CleanupInterval: -1,
		Logger: logs.Logger(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	require.Contains(t, logs.String(), "backend=postgres gate=false migrate=true cleanup_interval=0s postgres_protocol=optimistic")
	p := loginPolicy(t, "auth.schema")
	d, err := r.Limiter().Check(context.Background(), domain.NewCheck(p, r.KeyHasher().KeyString(p, "user")))
	require.NoError(t, err)
	require.True(t, d.PermitsRequest())
	var rows int
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM limits.runlimit_fixed_windows").Scan(&rows))
	require.Equal(t, 1, rows)
}

// A Config with a database URL and no backend runs on that database: the
// URL is never ignored in favour of the memory default.
func TestOpenWithOnlyADatabaseURLUsesPostgres(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	r, err := wiring.Open(context.Background(), wiring.Config{
		DatabaseURL: wiring.NewSecret(db.URL), SecretEnv: setEnv(t, testSecret), CleanupInterval: -1,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	p := loginPolicy(t, "auth.inferred")
	d, err := r.Limiter().Check(context.Background(), domain.NewCheck(p, r.KeyHasher().KeyString(p, "user")))
	require.NoError(t, err)
	require.True(t, d.PermitsRequest())
	var rows int
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM public.runlimit_fixed_windows").Scan(&rows))
	require.Equal(t, 1, rows, "the check was counted in the database")
}

// The pool a Runtime opens from a database URL serves the store alone, so
// it pins its search_path: a role whose search_path searches a schema
// before pg_catalog, which the store refuses (see
// postgres.ErrUnsafeSetting), runs the store all the same, and the
// look-alike operator waiting there changes nothing.
func TestOpenFromURLPinsTheSearchPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	svc := db.NewServiceRole(t, "public")
	db.PlantLookalikeEquals(t, svc)

	r, err := wiring.Open(ctx, wiring.Config{
		DatabaseURL: wiring.NewSecret(svc.URL), SecretEnv: setEnv(t, testSecret), CleanupInterval: -1,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	require.NoError(t, r.Ready(ctx))
	p := loginPolicy(t, "auth.pinned")
	for _, subject := range []string{"a", "b", "a"} {
		d, err := r.Limiter().Check(ctx, domain.NewCheck(p, r.KeyHasher().KeyString(p, subject)))
		require.NoError(t, err)
		require.True(t, d.PermitsRequest())
	}
	var rows, used int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*), sum(used) FROM public.runlimit_fixed_windows").Scan(&rows, &used))
	require.Equal(t, 2, rows)
	require.Equal(t, 3, used)
}
