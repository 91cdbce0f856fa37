package memory_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/ports"
)

// Each CleanupExpired call starts from the shard after the one the last
// call started from, so a budget of one entry a call still reaches every
// shard.
func TestCleanupExpiredStartsFromTheNextShardEachCall(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 16, Shards: 4})
	short := policy(1, time.Second)
	for shard := range 4 {
		for _, c := range f.onShard(t, short, shard, 2) {
			f.allow(t, c)
		}
	}
	require.Equal(t, memoryStats{Entries: 8, Headroom: []int64{2, 2, 2, 2}}, f.stats(t))
	f.clock.Advance(time.Second)
	ctx := context.Background()
	want := []int64{2, 2, 2, 2}
	for call := range 4 {
		n, err := f.store.CleanupExpired(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		want[call]++
		require.Equal(t, want, f.stats(t).Headroom, "after call %d", call)
	}
}

// RecoverPoisoned empties a shard but keeps its time: a clock that went
// back while the shard was poisoned still cannot start a window before
// the time the shard had reached.
func TestRecoverPoisonedKeepsTheShardsTime(t *testing.T) {
	t.Parallel()
	clock := new(testkit.TrapClock)
	f := setup(t, memory.Config{MaxKeys: 4, Clock: clock})
	c := f.check(policy(2, 10*time.Second), "subject")
	clock.Set(10 * time.Second)
	f.allow(t, c)
	clock.Arm(true)
	require.PanicsWithValue(t, testkit.TrapPanic, func() { _, _ = f.limiter.Check(context.Background(), c) })
	clock.Arm(false)
	require.Equal(t, 1, f.store.RecoverPoisoned())

	clock.Set(time.Second)
	a := f.allow(t, c) // read as 10 s: the window [10 s, 20 s)
	require.Equal(t, int64(1), a.Remaining)
	clock.Set(12 * time.Second)
	a = f.allow(t, c)
	require.Equal(t, domain.Allowance{Limit: 2, Remaining: 0, ResetAfter: 8 * time.Second}, a,
		"a window anchored at 1 s would have ended at 11 s")
}

// endingContext is a context whose Err reports nil for its first live
// calls and context.Canceled from then on: it ends at a point of the
// callee's choosing, without a goroutine or a clock.
type endingContext struct {
	context.Context
	live atomic.Int32
}

func (c *endingContext) Err() error {
	if c.live.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// A context that ends between shards stops the sweep: the shards cleaned
// so far stay cleaned, the rest are untouched, and the count so far comes
// back with the context's error.
func TestCleanupExpiredStopsBetweenShardsWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 8, Shards: 2})
	short := policy(1, time.Second)
	for shard := range 2 {
		for _, c := range f.onShard(t, short, shard, 2) {
			f.allow(t, c)
		}
	}
	f.clock.Advance(time.Second)
	ctx := &endingContext{Context: context.Background()}
	ctx.live.Store(1) // the check before the sweep
	n, err := f.store.CleanupExpired(ctx, 100)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ports.MayHaveConsumedQuota(err))
	require.Equal(t, 2, n, "the first shard was cleaned")
	require.Equal(t, memoryStats{Entries: 2, Headroom: []int64{4, 2}}, f.stats(t))
}

// gateClock is a manual clock that, while shut, announces each reading
// and holds it until it is let through: the test then knows its caller
// has got as far as the clock, and chooses what happens meanwhile.
type gateClock struct {
	memory.ManualClock
	shut    atomic.Bool
	reading chan struct{}
	open    chan struct{}
}

func (c *gateClock) Now() time.Duration {
	if c.shut.Load() {
		c.reading <- struct{}{}
		<-c.open
	}
	return c.ManualClock.Now()
}

// A cleanup that began before Close and reaches its first shard after it
// fails closed there instead of sweeping the released shards.
func TestCleanupOvertakenByCloseFailsClosed(t *testing.T) {
	t.Parallel()
	clock := &gateClock{reading: make(chan struct{}), open: make(chan struct{})}
	f := setup(t, memory.Config{MaxKeys: 4, Shards: 2, Clock: clock})
	f.allow(t, f.check(policy(1, time.Second), "subject"))
	clock.Advance(time.Second)

	clock.shut.Store(true)
	type result struct {
		n   int
		err error
	}
	done := make(chan result)
	go func() {
		n, err := f.store.CleanupExpired(context.Background(), 10)
		done <- result{n, err}
	}()
	<-clock.reading // past its own check of the store, before any lock
	require.NoError(t, f.store.Close())
	clock.shut.Store(false)
	close(clock.open)
	r := <-done
	require.ErrorIs(t, r.err, memory.ErrClosed)
	require.Zero(t, r.n)
}
