package wiring_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// fakeStore is a host's store: a memory store behind the port, with every
// optional capability, whose Stats and CleanupExpired fail on demand and
// which counts its Close calls.
type fakeStore struct {
	inner    *memory.Store
	closes   atomic.Int32
	mu       sync.Mutex
	statsErr error
	cleanErr error
	cleanups int
	// removes is what the next CleanupExpired reports removed, once.
	removes int
}

var (
	_ ports.Store         = (*fakeStore)(nil)
	_ ports.Cleaner       = (*fakeStore)(nil)
	_ ports.StatsReporter = (*fakeStore)(nil)
	_ ports.Closer        = (*fakeStore)(nil)
)

func newFakeStore(t *testing.T) *fakeStore {
	t.Helper()
	inner, err := memory.New(memory.Config{MaxKeys: 100})
	require.NoError(t, err)
	t.Cleanup(func() { _ = inner.Close() })
	return &fakeStore{inner: inner}
}

func (s *fakeStore) Admit(ctx context.Context, b *domain.Batch) error { return s.inner.Admit(ctx, b) }

func (s *fakeStore) CleanupExpired(ctx context.Context, max int) (int, error) {
	s.mu.Lock()
	s.cleanups++
	err, removes := s.cleanErr, s.removes
	s.removes = 0
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if removes > 0 {
		return removes, nil
	}
	return s.inner.CleanupExpired(ctx, max)
}

func (s *fakeStore) Stats(ctx context.Context) (ports.Stats, error) {
	s.mu.Lock()
	err := s.statsErr
	s.mu.Unlock()
	if err != nil {
		return ports.Stats{}, err
	}
	return s.inner.Stats(ctx)
}

func (s *fakeStore) Close() error {
	s.closes.Add(1)
	return nil
}

func (s *fakeStore) set(statsErr, cleanErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statsErr, s.cleanErr = statsErr, cleanErr
}

func (s *fakeStore) cleanupCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cleanups
}

// admitOnly is a host store with no optional capability.
type admitOnly struct{ inner *memory.Store }

func (s admitOnly) Admit(ctx context.Context, b *domain.Batch) error { return s.inner.Admit(ctx, b) }

func TestHostStoreIsBorrowed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newFakeStore(t)
	rec := &recorder{}
	ticks := make(chan time.Time)
	// Backend left empty: a Store implies the store backend.
	r, err := wiring.OpenWithTicks(ctx, wiring.Config{Store: store, KeySecret: wiring.NewSecret(testSecret), Observer: rec}, ticks)
	require.NoError(t, err)

	p := loginPolicy(t, "auth.login")
	require.True(t, check(t, r.Limiter(), r.KeyHasher(), p, "user").PermitsRequest())
	require.Equal(t, []seen{{limiter: "store", outcome: domain.Allowed}}, rec.take(), "observers see the host store's admissions")

	// The store is a Cleaner: the loop cleans it.
	tick(t, ticks)
	tick(t, ticks) // taken once the first pass is over
	require.Positive(t, store.cleanupCalls())

	require.NoError(t, r.Ready(ctx))
	require.NoError(t, r.Close(ctx))
	require.Zero(t, store.closes.Load(), "a borrowed store is never closed")
}

func TestHostStoreFromNewStoreFuncIsOwned(t *testing.T) {
	t.Parallel()
	ctx := context.WithValue(context.Background(), ctxKey{}, "from New")
	store := newFakeStore(t)
	var gotCtx context.Context
	r, err := wiring.New(ctx, wiring.Config{
		Backend: wiring.BackendStore,
		NewStoreFunc: func(ctx context.Context) (ports.Store, error) {
			gotCtx = ctx
			return store, nil
		},
		KeySecret: wiring.NewSecret(testSecret),
	})
	require.NoError(t, err)
	require.Equal(t, "from New", gotCtx.Value(ctxKey{}), "NewStoreFunc gets New's context")
	require.ErrorIs(t, r.Ready(ctx), wiring.ErrNotStarted)
	require.NoError(t, r.Start(ctx))

	p := loginPolicy(t, "auth.login")
	require.True(t, check(t, r.Limiter(), r.KeyHasher(), p, "user").PermitsRequest())
	require.NoError(t, r.Close(ctx))
	require.NoError(t, r.Close(ctx))
	require.Equal(t, int32(1), store.closes.Load(), "a store the Runtime opened is closed once")
}

type ctxKey struct{}

func TestHostStoreWithoutCapabilities(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inner, err := memory.New(memory.Config{MaxKeys: 10})
	require.NoError(t, err)
	t.Cleanup(func() { _ = inner.Close() })
	r, err := wiring.Open(ctx, wiring.Config{
		NewStoreFunc: func(context.Context) (ports.Store, error) { return admitOnly{inner}, nil },
		KeySecret:    wiring.NewSecret(testSecret),
		Gate:         &memory.Config{MaxKeys: 4},
	})
	require.NoError(t, err)
	require.NotNil(t, r.Gate(), "a gate can sit in front of a host store")
	p := loginPolicy(t, "auth.login")
	require.True(t, check(t, r.Limiter(), r.KeyHasher(), p, "user").PermitsRequest())
	require.NoError(t, r.Ready(ctx), "a store without stats is ready while the Runtime runs")
	require.NoError(t, r.Close(ctx))
	require.ErrorIs(t, r.Ready(ctx), wiring.ErrClosed)
}

func TestHostStoreErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("redis: connection refused")
	var nilStore *fakeStore
	tests := []struct {
		name      string
		cfg       wiring.Config
		wantField string // "" for an error that is not a ConfigError
		wantErr   error
	}{
		{"NewStoreFunc fails", wiring.Config{NewStoreFunc: func(context.Context) (ports.Store, error) { return nil, boom }}, "", boom},
		{"NewStoreFunc returns nil", wiring.Config{NewStoreFunc: func(context.Context) (ports.Store, error) { return nil, nil }}, "NewStoreFunc", wiring.ErrInvalidConfig},
		{"NewStoreFunc returns a nil pointer", wiring.Config{NewStoreFunc: func(context.Context) (ports.Store, error) { return nilStore, nil }}, "NewStoreFunc", wiring.ErrInvalidConfig},
		{"Store is a nil pointer", wiring.Config{Store: nilStore}, "Store", wiring.ErrInvalidConfig},
		{"store backend without a store", wiring.Config{Backend: wiring.BackendStore}, "Store", wiring.ErrInvalidConfig},
		{"Store and NewStoreFunc", wiring.Config{Store: admitOnly{}, NewStoreFunc: func(context.Context) (ports.Store, error) { return nil, nil }}, "Store", wiring.ErrInvalidConfig},
		{"Store with the memory backend", wiring.Config{Backend: wiring.BackendMemory, Store: admitOnly{}}, "Store", wiring.ErrInvalidConfig},
		{"Store with the postgres backend", wiring.Config{Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret("postgres://x"), Store: admitOnly{}}, "Store", wiring.ErrInvalidConfig},
		{"Store and a DatabaseURL", wiring.Config{Store: admitOnly{}, DatabaseURL: wiring.NewSecret("postgres://x")}, "DatabaseURL", wiring.ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.KeySecret = wiring.NewSecret(testSecret)
			r, err := wiring.New(context.Background(), tt.cfg)
			require.Nil(t, r)
			require.ErrorIs(t, err, tt.wantErr)
			var ce *wiring.ConfigError
			if tt.wantField == "" {
				require.False(t, errors.As(err, &ce), "a failing store is not a config error: %v", err)
				return
			}
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tt.wantField, ce.Field)
		})
	}
}
