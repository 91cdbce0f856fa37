package wiring_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/ports"
)

// ctxCleanStore is a host's store whose CleanupExpired says it started and
// then waits for its context to end, as a store's call on a slow database
// does, and returns the context's error.
type ctxCleanStore struct {
	*fakeStore
	entered chan struct{}
	ended   chan error
}

func (s ctxCleanStore) CleanupExpired(ctx context.Context, _ int) (int, error) {
	s.entered <- struct{}{}
	<-ctx.Done()
	s.ended <- ctx.Err()
	return 0, ctx.Err()
}

// detachingCleanupObserver starts each pass's "span" from
// context.Background() rather than from the loop's context.
type detachingCleanupObserver struct{}

func (detachingCleanupObserver) StartCleanup(context.Context, string) context.Context {
	return context.WithValue(context.Background(), ctxKey{}, "span")
}
func (detachingCleanupObserver) EndCleanup(context.Context, string, int, error) {}

// TestCloseCancelsAPassWhoseObserverDetachedItsContext: the pass runs with
// the context its CleanupObserver's StartCleanup returns, and one that
// was not derived from the loop's (a span started from
// context.Background()) used to make the pass impossible to cancel: Close
// waited for its whole context and reported "the cleanup loop did not
// stop", and the stores stayed open until the store's call gave up on
// its own. Close now cancels the pass whatever context the observer chose.
func TestCloseCancelsAPassWhoseObserverDetachedItsContext(t *testing.T) {
	t.Parallel()
	s := ctxCleanStore{fakeStore: newFakeStore(t), entered: make(chan struct{}, 1), ended: make(chan error, 1)}
	ticks := make(chan time.Time)
	r, err := wiring.OpenWithTicks(context.Background(), wiring.Config{
		NewStoreFunc:    func(context.Context) (ports.Store, error) { return s, nil },
		SecretEnv:       setEnv(t, testSecret),
		CleanupObserver: detachingCleanupObserver{},
	}, ticks)
	require.NoError(t, err)
	tick(t, ticks)
	<-s.entered

	// Only a guard against hanging the run: a Close that cancels the pass
	// returns as soon as the store's call does.
	ctx, cancel := context.WithTimeout(context.Background(), stuck)
	defer cancel()
	require.NoError(t, r.Close(ctx), "Close cancels the pass and closes the store")
	require.ErrorIs(t, <-s.ended, context.Canceled)
	require.EqualValues(t, 1, s.closes.Load())
}
