package wiring_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
)

// TestSecretSetToAnEmptyStringIsRefused: a DatabaseURL or KeySecret built
// from an empty string, as NewSecret(os.Getenv(name)) builds it when the
// variable is unset, or as a configuration file's empty field decodes, is
// a config error naming the field. Taken for unset, the empty URL would
// let the backend be inferred as memory (counters of each replica's own)
// and the empty key secret would let a secret from the environment in
// (keys that differ between replicas where that variable differs).
func TestSecretSetToAnEmptyStringIsRefused(t *testing.T) {
	// The default variable holds a valid secret, which an empty KeySecret
	// must not fall back to.
	t.Setenv(wiring.DefaultSecretEnv, testSecret)
	ctx := context.Background()
	var decoded wiring.Secret
	require.NoError(t, decoded.UnmarshalText(nil))
	for name, tc := range map[string]struct {
		cfg   wiring.Config
		field string
	}{
		"empty DatabaseURL, no backend": {wiring.Config{DatabaseURL: wiring.NewSecret(""), Memory: memory.Config{MaxKeys: 10}}, "DatabaseURL"},
		"empty DatabaseURL, postgres":   {wiring.Config{Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret("")}, "DatabaseURL"},
		"decoded empty DatabaseURL":     {wiring.Config{DatabaseURL: decoded, Memory: memory.Config{MaxKeys: 10}}, "DatabaseURL"},
		"empty KeySecret":               {wiring.Config{Backend: wiring.BackendMemory, Memory: memory.Config{MaxKeys: 10}, KeySecret: wiring.NewSecret("")}, "KeySecret"},
		"decoded empty KeySecret":       {wiring.Config{Backend: wiring.BackendMemory, Memory: memory.Config{MaxKeys: 10}, KeySecret: decoded}, "KeySecret"},
	} {
		t.Run(name, func(t *testing.T) {
			require.False(t, tc.cfg.DatabaseURL.IsZero() && tc.cfg.KeySecret.IsZero(), "the case must set a secret")
			var ce *wiring.ConfigError
			require.ErrorAs(t, tc.cfg.Validate(), &ce)
			require.Equal(t, tc.field, ce.Field)
			require.Contains(t, ce.Reason, "empty string")
			r, err := wiring.New(ctx, tc.cfg)
			require.ErrorAs(t, err, &ce, "New must refuse it too, before anything is built")
			require.Nil(t, r)
		})
	}

	// The zero Secret is unset: the memory backend and the default
	// variable's secret, as before.
	r, err := wiring.New(ctx, wiring.Config{Memory: memory.Config{MaxKeys: 10}})
	require.NoError(t, err)
	require.NoError(t, r.Close(ctx))
}

// TestEmptySecretPrintsEmpty: a Secret set to an empty string has nothing
// to withhold and prints as the zero one does, but is not zero.
func TestEmptySecretPrintsEmpty(t *testing.T) {
	t.Parallel()
	s := wiring.NewSecret("")
	require.False(t, s.IsZero())
	require.True(t, wiring.Secret{}.IsZero())
	require.Empty(t, s.String())
	require.Empty(t, s.Reveal())
	require.Equal(t, "[redacted]", wiring.NewSecret("x").String())
}
