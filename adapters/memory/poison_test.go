package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/ports"
)

func requirePoisoned(t *testing.T, err error, shard int) {
	t.Helper()
	var pe *memory.PoisonedShardError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, shard, pe.Shard)
	require.ErrorIs(t, err, memory.ErrPoisoned)
	require.False(t, ports.MayHaveConsumedQuota(err))
}

func TestPanicPoisonsTheShardItHeld(t *testing.T) {
	t.Parallel()
	clock := new(testkit.TrapClock)
	f := setup(t, memory.Config{MaxKeys: 40, Shards: 4, Clock: clock})
	ctx := context.Background()
	p := policy(10, time.Minute)
	victim, bystander := f.onShard(t, p, 1, 1)[0], f.onShard(t, p, 2, 1)[0]
	f.allow(t, victim)
	f.allow(t, bystander)

	clock.Arm(true)
	require.PanicsWithValue(t, testkit.TrapPanic, func() { _, _ = f.limiter.Check(ctx, victim) }, "the panic propagates")
	clock.Arm(false)

	_, err := f.limiter.Check(ctx, victim)
	requirePoisoned(t, err, 1)
	_, err = f.limiter.CheckAll(ctx, []domain.Check{bystander, victim})
	requirePoisoned(t, err, 1)
	require.Equal(t, []int{1}, f.store.PoisonedShards())

	// Other shards keep working, and the failed batch consumed nothing.
	require.Equal(t, int64(8), f.allow(t, bystander).Remaining)

	// Stats still count the poisoned shard's entries but give it no room;
	// cleanup skips it and reports it.
	require.Equal(t, memoryStats{Entries: 2, Headroom: []int64{10, 0, 9, 10}}, f.stats(t))
	clock.Advance(time.Hour)
	n, err := f.store.CleanupExpired(ctx, 10)
	requirePoisoned(t, err, 1)
	require.Equal(t, 1, n, "the healthy shards are still cleaned")

	require.Equal(t, 1, f.store.RecoverPoisoned())
	require.Equal(t, 0, f.store.RecoverPoisoned())
	require.Nil(t, f.store.PoisonedShards())
	require.Equal(t, memoryStats{Entries: 0, Headroom: []int64{10, 10, 10, 10}}, f.stats(t))
	require.Equal(t, int64(9), f.allow(t, victim).Remaining, "a recovered shard starts empty")
}

func TestPanicInBatchPoisonsEveryShardHeld(t *testing.T) {
	t.Parallel()
	clock := new(testkit.TrapClock)
	f := setup(t, memory.Config{MaxKeys: 40, Shards: 4, Clock: clock})
	ctx := context.Background()
	p := policy(10, time.Minute)
	high, low, healthy := f.onShard(t, p, 3, 1)[0], f.onShard(t, p, 0, 1)[0], f.onShard(t, p, 2, 1)[0]
	f.allow(t, healthy)
	f.allow(t, healthy)

	clock.Arm(true)
	require.PanicsWithValue(t, testkit.TrapPanic, func() { _, _ = f.limiter.CheckAll(ctx, []domain.Check{high, low}) })
	clock.Arm(false)

	require.Equal(t, []int{0, 3}, f.store.PoisonedShards())
	_, err := f.limiter.Check(ctx, high)
	requirePoisoned(t, err, 3)
	_, err = f.limiter.CheckAll(ctx, []domain.Check{healthy, high, low})
	requirePoisoned(t, err, 0) // the first poisoned shard in lock order
	require.Equal(t, int64(7), f.allow(t, healthy).Remaining)

	require.Equal(t, 2, f.store.RecoverPoisoned())
	require.Equal(t, int64(6), f.allow(t, healthy).Remaining, "healthy shards keep their counters")
	bd, err := f.limiter.CheckAll(ctx, []domain.Check{high, low})
	require.NoError(t, err)
	require.Equal(t, domain.Allowed, bd.Outcome())
}

func TestPanickingClockInCleanupPoisonsNothing(t *testing.T) {
	t.Parallel()
	clock := new(testkit.TrapClock)
	f := setup(t, memory.Config{MaxKeys: 4, Clock: clock})
	clock.Arm(true)
	require.PanicsWithValue(t, testkit.TrapPanic, func() { _, _ = f.store.CleanupExpired(context.Background(), 1) })
	clock.Arm(false)
	require.Nil(t, f.store.PoisonedShards())
	f.allow(t, f.check(policy(1, time.Second), "subject"))
}
