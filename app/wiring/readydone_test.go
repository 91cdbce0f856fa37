package wiring_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
)

// TestReadyWithADoneContext: a probe whose context was already done got
// "ready" from a Runtime over a host store that proves nothing (or whose
// readiness check ignores its context), and a *NotReadyError blaming the
// memory store from one over memory. Every Runtime now answers with the
// context's error, naming no store.
func TestReadyWithADoneContext(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]func(t *testing.T) wiring.Config{
		"memory": memoryConfig,
		"host store without capabilities": func(t *testing.T) wiring.Config {
			return wiring.Config{Store: admitOnly{inner: newFakeStore(t).inner}, KeySecret: wiring.NewSecret(testSecret)}
		},
		"host store whose check ignores its context": func(t *testing.T) wiring.Config {
			return wiring.Config{Store: &readyStore{Store: newFakeStore(t)}, KeySecret: wiring.NewSecret(testSecret)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, err := wiring.Open(context.Background(), cfg(t))
			require.NoError(t, err)
			t.Cleanup(func() { _ = r.Close(context.Background()) })
			require.NoError(t, r.Ready(context.Background()))

			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err = r.Ready(ctx)
			require.ErrorIs(t, err, context.Canceled)
			var nre *wiring.NotReadyError
			require.False(t, errors.As(err, &nre), "no store is blamed: %v", err)
		})
	}
}
