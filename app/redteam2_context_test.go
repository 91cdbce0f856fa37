package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// detachingObserver is a ContextObserver whose StartAdmission returns a
// context of its own, not derived from the caller's: a tracer that starts
// its span from context.Background(), say. It puts a value there that the
// store is to see.
type detachingObserver struct{}

type detachedKey struct{}

func (detachingObserver) ObserveAdmission(app.Event) {}
func (detachingObserver) StartAdmission(context.Context, app.Event) context.Context {
	return context.WithValue(context.Background(), detachedKey{}, "span")
}
func (detachingObserver) EndAdmission(context.Context, app.Event) {}

// deadlineStore records the deadline and the value of detachedKey of the
// context each admission reaches it with, and whether it was done.
type deadlineStore struct {
	ports.Store
	deadline time.Time
	hasDL    bool
	value    any
	err      error
}

func (s *deadlineStore) record(ctx context.Context) {
	s.deadline, s.hasDL = ctx.Deadline()
	s.value, s.err = ctx.Value(detachedKey{}), ctx.Err()
}

func (s *deadlineStore) Admit(ctx context.Context, b *domain.Batch) error {
	s.record(ctx)
	return s.Store.Admit(ctx, b)
}

// TestContextObserverCannotDetachTheCallersContext: a ContextObserver's
// StartAdmission that returned a context not derived from the caller's
// (a span started from context.Background()) used to hand the store that
// context alone, so the caller's deadline and cancellation never reached
// the store: a request whose context was already cancelled still
// consumed quota on the memory store, and a PostgreSQL admission ran for
// the store's own 3 s budget instead of the caller's few milliseconds.
// The store now sees the observer's values under the caller's deadline
// and cancellation.
func TestContextObserverCannotDetachTheCallersContext(t *testing.T) {
	t.Parallel()
	hasher, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	p := loginPolicy(t, "auth.login")
	check := domain.NewCheck(p, hasher.KeyString(p, "alice@example.test"))

	t.Run("a cancelled caller consumes nothing", func(t *testing.T) {
		t.Parallel()
		store, err := memory.New(memory.Config{MaxKeys: 10})
		require.NoError(t, err)
		l, err := app.NewLimiter(store, app.LimiterConfig{Observer: detachingObserver{}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = l.Check(ctx, check)
		require.ErrorIs(t, err, context.Canceled, "Check")
		_, err = l.CheckAll(ctx, []domain.Check{check})
		require.ErrorIs(t, err, context.Canceled, "CheckAll")
		st, err := store.Stats(context.Background())
		require.NoError(t, err)
		require.Zero(t, st.Entries, "a cancelled request consumed quota")
	})

	t.Run("the store sees the caller's deadline and the observer's values", func(t *testing.T) {
		t.Parallel()
		mem, err := memory.New(memory.Config{MaxKeys: 10})
		require.NoError(t, err)
		store := &deadlineStore{Store: mem}
		l, err := app.NewLimiter(store, app.LimiterConfig{Observer: detachingObserver{}})
		require.NoError(t, err)
		deadline := time.Now().Add(time.Hour)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		_, err = l.CheckAll(ctx, []domain.Check{check})
		require.NoError(t, err)
		require.True(t, store.hasDL, "the caller's deadline was dropped")
		require.True(t, store.deadline.Equal(deadline))
		require.Equal(t, "span", store.value, "the observer's context is kept")
		require.NoError(t, store.err)
	})
}
