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
	"github.com/runlimit/runlimit/ports"
)

// TestGraphStoreBesideAnotherBackend: a ports.Store in the graph is the
// host's store only when the Config selects the store backend. A Config
// with Backend empty but another backend's fields set is ambiguous beside
// it and fails the application's construction, naming the conflict; one
// that names its backend gets it, and the graph's store is left alone.
func TestGraphStoreBesideAnotherBackend(t *testing.T) {
	t.Parallel()
	secret := wiring.NewSecret(testSecret)

	t.Run("ambiguous", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			cfg  wiring.Config
			want string
		}{
			{wiring.Config{Memory: memory.Config{MaxKeys: 5}, KeySecret: secret},
				`runlimit: invalid config: Memory is set, Backend is empty and the graph provides a ports.Store: set Backend to "memory" to use the memory store, or to "store" to use the graph's store`},
			{wiring.Config{DatabaseURL: wiring.NewSecret("postgres://runlimit@db.internal/app"), KeySecret: secret},
				`runlimit: invalid config: DatabaseURL or Pool is set, Backend is empty and the graph provides a ports.Store: set Backend to "postgres" to use the database, or to "store" to use the graph's store`},
		} {
			store := newHostStore(t)
			err := fx.New(fx.NopLogger, runlimitfx.Module, fx.Supply(tc.cfg),
				fx.Supply(fx.Annotate(store, fx.As(new(ports.Store)))), useEverything).Err()
			require.ErrorIs(t, err, wiring.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.want)
		}
	})

	for _, tc := range []struct {
		name       string
		cfg        wiring.Config
		graphStore bool // the check goes to the graph's store
	}{
		{"backend store", wiring.Config{Backend: wiring.BackendStore, KeySecret: secret}, true},
		{"backend empty, nothing else set", wiring.Config{KeySecret: secret}, true},
		{"backend store, gate set", wiring.Config{Backend: wiring.BackendStore, Gate: &memory.Config{MaxKeys: 5}, KeySecret: secret}, true},
		{"backend memory", wiring.Config{Backend: wiring.BackendMemory, Memory: memory.Config{MaxKeys: 5}, KeySecret: secret}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := newHostStore(t)
			var got provided
			fxApp := fxtest.New(t, runlimitfx.Module, fx.Supply(tc.cfg),
				fx.Supply(fx.Annotate(store, fx.As(new(ports.Store)))), fx.Populate(&got)).RequireStart()
			defer fxApp.RequireStop()
			require.True(t, check(t, got.Limiter, got.Hasher, loginPolicy(t, "auth.login"), "user").PermitsRequest())
			stats, err := store.Stats(context.Background())
			require.NoError(t, err)
			require.Equal(t, tc.graphStore, stats.Entries == 1, "the check went to the graph's store")
		})
	}

	// A host configured by its environment selects the graph's store the
	// same way, as the ambiguity's error tells it to: RUNLIMIT_BACKEND=store.
	t.Run("backend store from the environment, memory sized", func(t *testing.T) {
		t.Parallel()
		env := map[string]string{
			wiring.EnvBackend: "store", wiring.EnvMemoryMaxKeys: "5", wiring.DefaultSecretEnv: testSecret,
		}
		cfg, err := wiring.ConfigFromLookup(func(name string) (string, bool) { v, ok := env[name]; return v, ok })
		require.NoError(t, err)
		require.Equal(t, wiring.BackendStore, cfg.Backend)
		store := newHostStore(t)
		var got provided
		fxApp := fxtest.New(t, runlimitfx.Module, fx.Supply(cfg),
			fx.Supply(fx.Annotate(store, fx.As(new(ports.Store)))), fx.Populate(&got)).RequireStart()
		defer fxApp.RequireStop()
		require.True(t, check(t, got.Limiter, got.Hasher, loginPolicy(t, "auth.login"), "user").PermitsRequest())
		stats, err := store.Stats(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, 1, stats.Entries, "the check went to the graph's store")
	})
}
