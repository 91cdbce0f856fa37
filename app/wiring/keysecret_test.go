package wiring_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
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
