package wiring_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/ports"
)

// panicReadyStore is a host's store whose readiness check, Stats or
// PoisonedShards panics on demand with a value holding a subject.
type panicReadyStore struct {
	*fakeStore
	where atomic.Value // "Ready", "Stats", "PoisonedShards" or ""
}

func (s *panicReadyStore) panicIn(call string) {
	if w, _ := s.where.Load().(string); w == call {
		panic(errors.New("host bug while checking " + panicSubject))
	}
}

func (s *panicReadyStore) Ready(ctx context.Context) error {
	s.panicIn("Ready")
	return nil
}

func (s *panicReadyStore) Stats(ctx context.Context) (ports.Stats, error) {
	s.panicIn("Stats")
	return s.fakeStore.Stats(ctx)
}

func (s *panicReadyStore) PoisonedShards() []int {
	s.panicIn("PoisonedShards")
	return nil
}

// TestReadyRecoversAPanickingHostStore: the cleanup loop recovers every
// panic of a host's store, but a readiness probe and Start called the
// store's Ready, Stats and PoisonedShards bare, so a panic there crashed
// the probe's handler and, at start, the host's process (fx recovers no
// OnStart panic) with the Runtime neither started nor closed: a store
// from NewStoreFunc was left open. A panic is now a not-ready answer, a
// [*wiring.NotReadyError] matching [wiring.ErrReadyPanicked], logged by
// its value's type only; a Start that meets it fails and closes the
// Runtime.
func TestReadyRecoversAPanickingHostStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, call := range []string{"Ready", "PoisonedShards"} {
		t.Run(call, func(t *testing.T) {
			t.Parallel()
			var logs testkit.LogBuffer
			store := &panicReadyStore{fakeStore: newFakeStore(t)}
			cfg := wiring.Config{
				NewStoreFunc: func(context.Context) (ports.Store, error) { return store, nil },
				KeySecret:    wiring.NewSecret(testSecret), Logger: logs.Logger(), CleanupInterval: -1,
			}

			store.where.Store(call)
			var err error
			require.NotPanics(t, func() { _, err = wiring.Open(ctx, cfg) }, "Start")
			var nre *wiring.NotReadyError
			require.ErrorAs(t, err, &nre)
			require.Equal(t, "store", nre.Store)
			require.ErrorIs(t, err, wiring.ErrReadyPanicked)
			require.EqualValues(t, 1, store.closes.Load(), "the failed start closed the store it opened")

			store.where.Store("")
			r, err := wiring.Open(ctx, cfg)
			require.NoError(t, err)
			defer func() { _ = r.Close(ctx) }()
			require.NoError(t, r.Ready(ctx))
			store.where.Store(call)
			require.NotPanics(t, func() { err = r.Ready(ctx) }, "Ready")
			require.ErrorAs(t, err, &nre)
			require.ErrorIs(t, err, wiring.ErrReadyPanicked)
			store.where.Store("")
			require.NoError(t, r.Ready(ctx), "ready again once the store is")

			out := logs.String()
			require.Contains(t, out, "panic_type=*errors.errorString")
			require.False(t, strings.Contains(out, panicSubject) || strings.Contains(err.Error(), panicSubject),
				"the panic's value is never printed: %s", out)
		})
	}
	t.Run("Stats", func(t *testing.T) {
		t.Parallel()
		store := &panicReadyStore{fakeStore: newFakeStore(t)}
		// Without a readiness check of its own, Stats proves the store.
		r, err := wiring.Open(ctx, wiring.Config{Store: statsOnly{store}, KeySecret: wiring.NewSecret(testSecret), Logger: new(testkit.LogBuffer).Logger()})
		require.NoError(t, err)
		defer func() { _ = r.Close(ctx) }()
		store.where.Store("Stats")
		require.NotPanics(t, func() { err = r.Ready(ctx) })
		require.ErrorIs(t, err, wiring.ErrReadyPanicked)
	})
}

// statsOnly hides every capability of its store but Stats.
type statsOnly struct{ s *panicReadyStore }

func (s statsOnly) Admit(ctx context.Context, b *domain.Batch) error { return s.s.Admit(ctx, b) }
func (s statsOnly) Stats(ctx context.Context) (ports.Stats, error)   { return s.s.Stats(ctx) }
