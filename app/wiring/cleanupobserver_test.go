package wiring_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/ports"
)

// passKey is the context key a cleanupRecorder puts the pass's number under.
type passKey struct{}

// pass is what a cleanupRecorder saw of one cleanup pass.
type pass struct {
	store   string
	removed int
	err     error
	same    bool // EndCleanup got the context StartCleanup returned
}

// cleanupRecorder is a CleanupObserver that numbers each pass in the
// context it returns and records how it ended.
type cleanupRecorder struct {
	mu      sync.Mutex
	started []string
	passes  []pass
	panics  bool
}

func (r *cleanupRecorder) StartCleanup(ctx context.Context, store string) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, store)
	if r.panics {
		panic("observer bug")
	}
	return context.WithValue(ctx, passKey{}, len(r.started))
}

func (r *cleanupRecorder) EndCleanup(ctx context.Context, store string, removed int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, _ := ctx.Value(passKey{}).(int)
	r.passes = append(r.passes, pass{store: store, removed: removed, err: err, same: n == len(r.started)})
}

func (r *cleanupRecorder) take() ([]string, []pass) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, p := r.started, r.passes
	r.started, r.passes = nil, nil
	return s, p
}

// passCtxStore is a memory store that records the pass number in the
// context of each CleanupExpired call, and fails on demand.
type passCtxStore struct {
	*memory.Store
	mu   sync.Mutex
	seen []int
	err  error
}

func (s *passCtxStore) CleanupExpired(ctx context.Context, max int) (int, error) {
	n, _ := ctx.Value(passKey{}).(int)
	s.mu.Lock()
	s.seen = append(s.seen, n)
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return s.Store.CleanupExpired(ctx, max)
}

// TestCleanupObserverSeesEveryPass: the observer starts each pass, the
// store is cleaned with the context it returned, and it ends the pass
// with that context, the counters removed and the store's error.
func TestCleanupObserverSeesEveryPass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := memory.NewManualClock()
	inner, err := memory.New(memory.Config{MaxKeys: 100, Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = inner.Close() })
	store := &passCtxStore{Store: inner}
	obs := &cleanupRecorder{}
	ticks := make(chan time.Time)
	r, err := wiring.OpenWithTicks(ctx, wiring.Config{
		Store: store, KeySecret: wiring.NewSecret(testSecret), CleanupObserver: obs,
		CleanupErrorFunc: func(error) {}, // failures are the observer's here
	}, ticks)
	require.NoError(t, err)

	p := loginPolicy(t, "auth.login")
	for _, subject := range []string{"a", "b", "c"} {
		check(t, r.Limiter(), r.KeyHasher(), p, subject)
	}
	clock.Advance(2 * time.Minute)
	tick(t, ticks) // removes the three expired counters
	tick(t, ticks) // the first pass is over: a tick is taken between passes
	store.mu.Lock()
	store.err = errors.New("backend down")
	store.mu.Unlock()
	tick(t, ticks) // the second pass may or may not have seen the failure; the third does
	tick(t, ticks)
	require.NoError(t, r.Close(ctx))

	// Four ticks, three passes, and a fourth when it began before Close
	// stopped the loop: it ends with the store's error or with the
	// cancellation of Close. A loop stopped between taking a tick and
	// starting its pass starts none, so that a loop between passes stops
	// without calling the store.
	started, passes := obs.take()
	require.Contains(t, []int{3, 4}, len(started))
	require.Equal(t, slices.Repeat([]string{"store"}, len(started)), started)
	require.Len(t, passes, len(started))
	require.Equal(t, pass{store: "store", removed: 3, same: true}, passes[0])
	require.EqualError(t, passes[2].err, "backend down")
	require.True(t, passes[2].same)
	store.mu.Lock()
	defer store.mu.Unlock()
	for i, n := range store.seen {
		require.Equal(t, i+1, n, "call %d runs with its pass's context", i)
	}
}

// TestCleanupObserverPanicsAreLogged: an observer that panics costs the
// loop nothing: the pass runs and the panic is logged by type.
func TestCleanupObserverPanicsAreLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs testkit.LogBuffer
	store := newFakeStore(t)
	ticks := make(chan time.Time)
	r, err := wiring.OpenWithTicks(ctx, wiring.Config{
		Store: store, KeySecret: wiring.NewSecret(testSecret), Logger: logs.Logger(),
		CleanupObserver: &cleanupRecorder{panics: true},
	}, ticks)
	require.NoError(t, err)
	tick(t, ticks)
	tick(t, ticks)
	require.NoError(t, r.Close(ctx))
	out := logs.String()
	require.Contains(t, out, `level=ERROR msg="runlimit: cleanup observer panicked; the loop goes on" store=store panic_type=string`)
	require.Contains(t, out, `level=DEBUG msg="runlimit: cleanup" store=store removed=0`, "the pass ran")
	store.mu.Lock()
	defer store.mu.Unlock()
	require.GreaterOrEqual(t, store.cleanups, 1)
}

// poison makes a check of subject panic inside its shard's lock.
func poison(t *testing.T, c *testkit.TrapClock, r *wiring.Runtime, p domain.Policy, subject string) {
	t.Helper()
	c.Arm(true)
	require.Panics(t, func() {
		_, _ = r.Limiter().Check(context.Background(), domain.NewCheck(p, r.KeyHasher().KeyString(p, subject)))
	})
	c.Arm(false)
}

// TestPoisonedShardsAreLoggedOncePerShard: a shard poisoned by a panic is
// logged at error level once, found by the cleanup loop or a readiness
// check, however many passes, probes and requests meet it; its cleanup
// failures are not logged as warnings each pass; a shard recovered and
// poisoned again is logged again.
func TestPoisonedShardsAreLoggedOncePerShard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs testkit.LogBuffer
	clock := new(testkit.TrapClock)
	store, err := memory.New(memory.Config{MaxKeys: 100, Shards: 1, Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	ticks := make(chan time.Time)
	done := make(passDone, 4)
	r, err := wiring.OpenWithTicks(ctx, wiring.Config{
		Store: store, KeySecret: wiring.NewSecret(testSecret), Logger: logs.Logger(), CleanupObserver: done,
	}, ticks)
	require.NoError(t, err)
	p := loginPolicy(t, "auth.login")
	const subject = "alice@example.test"
	key := r.KeyHasher().KeyString(p, subject)

	poison(t, clock, r, p, subject)
	for range 3 {
		_, err := r.Limiter().Check(ctx, domain.NewCheck(p, key))
		require.ErrorIs(t, err, memory.ErrPoisoned)
	}
	// Every pass is over before the clock is armed again: a pass reads it.
	for range 2 {
		tick(t, ticks)
		done.wait(t)
	}
	record := `level=ERROR msg="runlimit: memory store shard poisoned by a panic; its checks fail closed until it is recovered" store=store shard=0 poisoned_shards=1`
	require.Equal(t, 1, strings.Count(logs.String(), record), "the cleanup loop found it: %s", logs.String())
	require.NoError(t, r.Ready(ctx), "a poisoned shard does not make the runtime unready")
	require.NoError(t, r.Ready(ctx))
	out := logs.String()
	require.Equal(t, 1, strings.Count(out, record), out)
	require.NotContains(t, out, "cleanup failed", "the poisoning is no news at each pass")
	require.Contains(t, out, `level=DEBUG msg="runlimit: cleanup" store=store removed=0`)

	require.Equal(t, 1, store.RecoverPoisoned())
	require.NoError(t, r.Ready(ctx))
	poison(t, clock, r, p, subject)
	require.NoError(t, r.Ready(ctx))
	require.NoError(t, r.Close(ctx))
	out = logs.String()
	require.Equal(t, 2, strings.Count(out, record), "poisoned again, logged again: %s", out)
	sk := key.Bytes()
	requireNoLeak(t, out, []byte(testSecret), []byte(subject), sk[:])
}

// passDone is a CleanupObserver that signals the end of each pass.
type passDone chan struct{}

func (d passDone) StartCleanup(ctx context.Context, _ string) context.Context { return ctx }
func (d passDone) EndCleanup(context.Context, string, int, error)             { d <- struct{}{} }

// wait waits for the end of a pass.
func (d passDone) wait(t *testing.T) {
	t.Helper()
	select {
	case <-d:
	case <-time.After(stuck):
		t.Fatalf("no cleanup pass ended within %v", stuck)
	}
}

// TestStatsFuncsNameEveryReportingStore: the Runtime hands out the Stats
// of each store that reports them, by name, for headroom gauges.
func TestStatsFuncsNameEveryReportingStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := wiring.Open(ctx, memoryConfig(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(ctx) })
	funcs := r.StatsFuncs()
	require.Len(t, funcs, 1)
	st, err := funcs["memory"](ctx)
	require.NoError(t, err)
	require.Equal(t, ports.Stats{Capacity: 100, Shards: 4, Headroom: []int64{25, 25, 25, 25}}, st)

	bare, err := wiring.Open(ctx, wiring.Config{Store: storeOnly{newFakeStore(t)}, KeySecret: wiring.NewSecret(testSecret)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = bare.Close(ctx) })
	require.Empty(t, bare.StatsFuncs(), "a store without Stats has none")
}

// storeOnly hides every optional capability of a store.
type storeOnly struct{ ports.Store }
