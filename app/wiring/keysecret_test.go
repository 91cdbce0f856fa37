package wiring_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

func TestKeySecretFromAValue(t *testing.T) {
	t.Parallel()
	r, err := wiring.New(context.Background(), wiring.Config{
		Memory: memory.Config{MaxKeys: 1}, KeySecret: wiring.NewSecret(testSecret),
	})
	require.NoError(t, err)
	requireHasherOf(t, r.KeyHasher())
}

func TestKeySecretFromASource(t *testing.T) {
	t.Parallel()
	ctx := context.WithValue(context.Background(), ctxKey{}, "from New")
	var gotCtx context.Context
	r, err := wiring.New(ctx, wiring.Config{
		Memory: memory.Config{MaxKeys: 1},
		KeySecretFunc: func(ctx context.Context) ([]byte, error) {
			gotCtx = ctx
			return []byte(testSecret), nil
		},
	})
	require.NoError(t, err)
	require.Equal(t, "from New", gotCtx.Value(ctxKey{}), "the source gets New's context")
	requireHasherOf(t, r.KeyHasher())
}

func TestKeySecretErrors(t *testing.T) {
	t.Parallel()
	const short = "short-secret-31-bytes-long-abcd"
	vault := errors.New("vault: permission denied")
	tests := []struct {
		name      string
		cfg       wiring.Config
		wantField string // "" for the source's own error
	}{
		{"short value", wiring.Config{KeySecret: wiring.NewSecret(short)}, "KeySecret"},
		{"short from the source", wiring.Config{KeySecretFunc: func(context.Context) ([]byte, error) { return []byte(short), nil }}, "KeySecretFunc"},
		{"value and source", wiring.Config{KeySecret: wiring.NewSecret(testSecret), KeySecretFunc: func(context.Context) ([]byte, error) { return nil, nil }}, "KeySecret"},
		{"value and variable", wiring.Config{KeySecret: wiring.NewSecret(testSecret), SecretEnv: "RUNLIMIT_APP_TEST_NEVER_SET"}, "KeySecret"},
		{"the source fails", wiring.Config{KeySecretFunc: func(context.Context) ([]byte, error) { return nil, vault }}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.Memory = memory.Config{MaxKeys: 1}
			r, err := wiring.New(context.Background(), tt.cfg)
			require.Nil(t, r)
			require.NotContains(t, err.Error(), short)
			if tt.wantField == "" {
				require.ErrorIs(t, err, vault)
				require.NotErrorIs(t, err, wiring.ErrInvalidConfig, "a failing source is not a config mistake")
				return
			}
			var ce *wiring.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tt.wantField, ce.Field)
			require.ErrorIs(t, err, wiring.ErrInvalidConfig)
		})
	}
}

// TestSecretEnvHoldingASecretIsNotRepeated: a host that writes the secret
// into SecretEnv, where the variable's name belongs (SecretEnv:
// os.Getenv("RUNLIMIT_KEY_SECRET")), finds its variable unset. The error
// used to repeat SecretEnv, the secret itself; it now names only a
// variable whose name is short and portable, and says why it names no
// other.
func TestSecretEnvHoldingASecretIsNotRepeated(t *testing.T) {
	t.Parallel()
	longName := "RUNLIMIT_APP_TEST_A_NAME_OF_32_BYTES_OR_MORE"
	require.NoError(t, os.Setenv(longName, "short"))
	t.Cleanup(func() { _ = os.Unsetenv(longName) })
	for name, env := range map[string]string{
		"the secret":                          "Kq7vXz2mWp9tLr4nBy6cHd8jFg3sQa5e",
		"a hex secret":                        "a3f09c4e7b215d68e0c1f2a9b47d3e6f5c8a1b0d9e2f4c7a6b3d8e1f0a5c2b4d",
		"a secret with no byte of a name":     "!@#$%^&*()-+=[]{};:,.<>/?|~`!@#$%",
		"a short password":                    "hunter2!",
		"a long name whose variable is short": longName,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := wiring.New(context.Background(), wiring.Config{Memory: memory.Config{MaxKeys: 1}, SecretEnv: env})
			var ce *wiring.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "SecretEnv", ce.Field)
			require.Contains(t, err.Error(), "its name is not repeated")
			leakcheck.Check(t, "SecretEnv error", err, []byte(env))
		})
	}
	// A short, portable name is a name, and the error says which.
	_, err := wiring.New(context.Background(), wiring.Config{Memory: memory.Config{MaxKeys: 1}, SecretEnv: "RUNLIMIT_APP_TEST_UNSET"})
	require.EqualError(t, err, "runlimit: invalid config: SecretEnv names environment variable RUNLIMIT_APP_TEST_UNSET, which is not set (set it to a secret of at least 32 bytes, or give Config.KeySecret or KeySecretFunc)")
}
