package wiring_test

import (
	"context"
	neturl "net/url"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// leakPassword is the password of every database URL the leak tests use.
const leakPassword = "hunter2-leak-password"

func TestNothingPrintsSecretsPasswordsOrKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := "postgres://quotauser:" + leakPassword + "@127.0.0.1:1/quotas"
	secretEnv := setEnv(t, testSecret)

	memCfg := wiring.Config{Memory: memory.Config{MaxKeys: 100}, SecretEnv: secretEnv}
	pgCfg := wiring.Config{Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(url), SecretEnv: secretEnv,
		Gate: &memory.Config{MaxKeys: 10}}
	memRuntime, err := wiring.Open(ctx, memCfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = memRuntime.Close(ctx) })
	// Not started: nothing listens at the URL, and the pool built from it
	// holds the password all the same.
	pgRuntime, err := wiring.New(ctx, pgCfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pgRuntime.Close(ctx) })

	subjects := []string{"alice@example.test", "198.51.100.7"}
	p := loginPolicy(t, "auth.login")
	hasher := memRuntime.KeyHasher()
	checks := []domain.Check{
		domain.NewCheck(p, hasher.KeyString(p, subjects[0])),
		domain.NewCheck(p, hasher.KeyString(p, subjects[1])),
	}
	for range 2 { // allowed, then denied
		_, err = memRuntime.Limiter().CheckAll(ctx, checks)
		require.NoError(t, err)
	}

	_, parseErr := wiring.Open(ctx, wiring.Config{Backend: wiring.BackendPostgres, SecretEnv: secretEnv,
		DatabaseURL: wiring.NewSecret("postgres://quotauser:" + leakPassword + "@127.0.0.1:notaport/quotas")})
	require.ErrorIs(t, parseErr, wiring.ErrInvalidConfig)
	_, secretErr := wiring.Open(ctx, wiring.Config{Memory: memory.Config{MaxKeys: 1}, SecretEnv: setEnv(t, "short")})
	require.ErrorIs(t, secretErr, wiring.ErrInvalidConfig)
	var cleanupErr error = &wiring.CleanupError{Store: "memory", Err: memory.ErrClosed}
	var notReadyErr error = &wiring.NotReadyError{Store: "postgres", Err: memory.ErrClosed}
	secretCfg := wiring.Config{Memory: memory.Config{MaxKeys: 100}, KeySecret: wiring.NewSecret(testSecret),
		KeySecretFunc: func(context.Context) ([]byte, error) { return []byte(testSecret), nil }}
	envCfg, err := wiring.ConfigFromLookup(func(name string) (string, bool) {
		switch name {
		case wiring.EnvKeySecret:
			return testSecret, true
		case wiring.EnvDatabaseURL:
			return url, true
		}
		return "", false
	})
	require.NoError(t, err)
	_, envErr := wiring.ConfigFromLookup(func(name string) (string, bool) {
		if name == wiring.EnvKeySecret {
			return leakPassword, true // too short, and a tell
		}
		return "", false
	})
	require.Error(t, envErr)

	secrets := [][]byte{[]byte(testSecret), []byte(leakPassword)}
	secrets = append(secrets, leakcheck.KeyedStates(t, []byte(testSecret))...)
	for i, c := range checks {
		sk := c.SubjectKey().Bytes()
		secrets = append(secrets, []byte(subjects[i]), sk[:])
	}

	cases := []leakcheck.Case{
		leakcheck.Value("Secret", wiring.NewSecret(url)),
		leakcheck.Value("zero Secret", wiring.Secret{}),
		leakcheck.Value("memory Config", memCfg),
		leakcheck.Value("Config with a KeySecret", secretCfg),
		leakcheck.Value("Config from the environment", envCfg),
		leakcheck.Value("EnvError", envErr),
		leakcheck.Value("NotReadyError", notReadyErr),
		leakcheck.Value("postgres Config", pgCfg),
		leakcheck.Value("memory Runtime", memRuntime),
		leakcheck.Value("postgres Runtime", pgRuntime),
		leakcheck.Value("memory Limiter", memRuntime.Limiter()),
		leakcheck.Value("gate Limiter", pgRuntime.Gate()),
		leakcheck.Value("postgres Limiter", pgRuntime.Limiter()),
		leakcheck.Value("Backend", wiring.BackendPostgres),
		leakcheck.Value("ConfigError of a URL", parseErr),
		leakcheck.Value("ConfigError of a secret", secretErr),
		leakcheck.Value("CleanupError", cleanupErr),
		leakcheck.Value("ErrInvalidConfig", wiring.ErrInvalidConfig),
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			tc.Run(t, secrets...)
		})
	}
}

// Every value that holds a host's pool prints no password: the pool's
// config holds it, and spew (in testify's diffs) walks exported and
// unexported fields and pointers without calling a method. The pool here is
// connected and serving, its URL holding a password the local server,
// trusting the role, ignores.
func TestNothingPrintsAPoolsPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	u, err := neturl.Parse(db.URL)
	require.NoError(t, err)
	u.User = neturl.UserPassword(u.User.Username(), leakPassword)
	pc, err := pgxpool.ParseConfig(u.String())
	require.NoError(t, err)
	pc.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	secretEnv := setEnv(t, testSecret)

	cfg := wiring.Config{Pool: wiring.BorrowPool(pool), SecretEnv: secretEnv}
	r, err := wiring.Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(ctx) })
	p := loginPolicy(t, "auth.login")
	_, err = r.Limiter().Check(ctx, domain.NewCheck(p, r.KeyHasher().KeyString(p, "alice")))
	require.NoError(t, err)
	store, err := postgres.New(pool, postgres.Config{})
	require.NoError(t, err)
	storeCfg := wiring.Config{Store: store, SecretEnv: secretEnv}

	for _, tc := range []leakcheck.Case{
		leakcheck.Value("Config with a Pool", cfg),
		leakcheck.Value("BorrowedPool", wiring.BorrowPool(pool)),
		leakcheck.Value("zero BorrowedPool", wiring.BorrowedPool{}),
		leakcheck.Value("Config with a postgres Store", storeCfg),
		leakcheck.Value("postgres Store", store),
		leakcheck.Value("Runtime on a Pool", r),
		leakcheck.Value("Limiter on a Pool", r.Limiter()),
	} {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			tc.Run(t, []byte(leakPassword))
		})
	}
}
