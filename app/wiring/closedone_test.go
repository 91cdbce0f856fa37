package wiring_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/ports"
)

// doneContext returns a context that is already cancelled, as a host's
// shutdown context is once serving its last requests used it up.
func doneContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestCleanupLoopStopsWithADoneContextBetweenPasses: a loop waiting for
// its next tick ends as soon as it is cancelled, without calling a store;
// stop used to give up on it at once when its own context was done.
func TestCleanupLoopStopsWithADoneContextBetweenPasses(t *testing.T) {
	t.Parallel()
	s := setupLoop(t)
	require.NoError(t, s.stop(doneContext()))
	<-s.tickerDone
	require.Zero(t, s.first.maxInFlight.Load())
}

// TestCloseWithADoneContextClosesAnIdleRuntime: Close with a context that
// was done already (a shutdown deadline an HTTP server's Shutdown used up,
// or fx's rollback after a start timeout) returned "the cleanup loop did
// not stop" and closed nothing, however idle the loop, leaving the stores,
// and a pool opened from a URL with its connections, open for good. It now
// stops the idle loop and closes everything.
func TestCloseWithADoneContextClosesAnIdleRuntime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	for name, cfg := range map[string]wiring.Config{
		"memory": memoryConfig(t),
		"postgres from a URL, with a gate": {DatabaseURL: wiring.NewSecret(db.URL), Gate: &memory.Config{MaxKeys: 10},
			SecretEnv: setEnv(t, testSecret)},
	} {
		r, err := wiring.OpenWithTicks(ctx, cfg, make(chan time.Time))
		require.NoError(t, err, name)
		// The loop stops at once; the stores close after it, which Close
		// may not wait for with a done context (a pool's connections take
		// a moment on a loaded machine), but which happens all the same.
		if err := r.Close(doneContext()); err != nil {
			require.ErrorIs(t, err, context.Canceled, name)
			require.ErrorContains(t, err, "the stores did not close", "%s: the idle loop must stop", name)
		}

		p := loginPolicy(t, "auth.login")
		check := domain.NewCheck(p, r.KeyHasher().KeyString(p, "alice"))
		require.Eventually(t, func() bool {
			_, err := r.Limiter().Check(ctx, check)
			return err != nil
		}, 10*time.Second, time.Millisecond, "%s: the store is closed", name)
		if gate := r.Gate(); gate != nil {
			require.Eventually(t, func() bool {
				_, err := gate.Check(ctx, check)
				return errors.Is(err, ports.ErrClosed)
			}, 10*time.Second, time.Millisecond, "%s: the gate is closed", name)
		}
		if pool := wiring.PoolOf(r); pool != nil {
			require.Eventually(t, func() bool { return pool.Ping(ctx) != nil }, 10*time.Second, time.Millisecond,
				"%s: the pool the Runtime opened is closed", name)
		}
		require.NoError(t, r.Close(ctx), name)
	}
}
