package wiring_test

import (
	"context"
	"crypto/sha256"
	"encoding"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// leakCase prints one value through every printer leakcheck knows, keeping
// the value's own type so that host structs hold it by value.
type leakCase struct {
	name  string
	check func(t *testing.T, secrets ...[]byte)
}

func leak[T any](name string, v T) leakCase {
	return leakCase{name, func(t *testing.T, secrets ...[]byte) {
		leakcheck.Check(t, name, v, secrets...)
		leakcheck.CheckDump(t, name, v, secrets...)
	}}
}

// leakPassword is the password of every database URL the leak tests use.
const leakPassword = "hunter2-leak-password"

// keyedStates returns the chaining words of the SHA-256 states HMAC keeps
// after absorbing the secret's ipad and opad blocks.
func keyedStates(t *testing.T, secret []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for _, pad := range []byte{0x36, 0x5c} {
		block := make([]byte, sha256.BlockSize)
		copy(block, secret)
		for i := range block {
			block[i] ^= pad
		}
		h := sha256.New()
		h.Write(block)
		state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
		require.NoError(t, err)
		out = append(out, state[4:4+sha256.Size])
	}
	return out
}

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
	secrets = append(secrets, keyedStates(t, []byte(testSecret))...)
	for i, c := range checks {
		sk := c.SubjectKey().Bytes()
		secrets = append(secrets, []byte(subjects[i]), sk[:])
	}

	cases := []leakCase{
		leak("Secret", wiring.NewSecret(url)),
		leak("zero Secret", wiring.Secret{}),
		leak("memory Config", memCfg),
		leak("Config with a KeySecret", secretCfg),
		leak("Config from the environment", envCfg),
		leak("EnvError", envErr),
		leak("NotReadyError", notReadyErr),
		leak("postgres Config", pgCfg),
		leak("memory Runtime", memRuntime),
		leak("postgres Runtime", pgRuntime),
		leak("memory Limiter", memRuntime.Limiter()),
		leak("gate Limiter", pgRuntime.Gate()),
		leak("postgres Limiter", pgRuntime.Limiter()),
		leak("Backend", wiring.BackendPostgres),
		// pgx's ParseConfigError, which this ConfigError wraps, keeps the
		// raw URL in an exported field: every printer but a whole spew
		// dump is kept from it by ConfigError's Format and MarshalJSON;
		// the dump needs the driver's error translated where runtime.go
		// receives it.
		{"ConfigError of a URL", func(t *testing.T, secrets ...[]byte) {
			leakcheck.Check(t, "ConfigError of a URL", parseErr, secrets...)
		}},
		leak("ConfigError of a secret", secretErr),
		leak("CleanupError", cleanupErr),
		leak("ErrInvalidConfig", wiring.ErrInvalidConfig),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.check(t, secrets...)
		})
	}
}
