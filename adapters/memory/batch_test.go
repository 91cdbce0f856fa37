package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

func TestBatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 8, Shards: 2})
	p := policy(3, time.Minute)
	fresh, exhausted := f.check(p, "fresh"), f.check(p, "exhausted")
	for range 3 {
		f.allow(t, exhausted)
	}
	f.clock.Advance(time.Second)
	bd, err := f.limiter.CheckAll(context.Background(), []domain.Check{fresh, exhausted})
	require.NoError(t, err)
	index, denial, ok := bd.Denied()
	require.True(t, ok)
	require.Equal(t, 1, index)
	require.Equal(t, 2, bd.Size())
	require.Equal(t, domain.QuotaExhausted, denial.Reason())
	require.Equal(t, 59*time.Second, retry(t, denial))

	// The fresh key was evaluated, not consumed, and not even stored.
	require.False(t, f.store.Holds(fresh.CounterKey()))
	require.Equal(t, int64(2), f.allow(t, fresh).Remaining)
}

func TestBatchAllowancesKeepCallerOrderAcrossShards(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 64, Shards: 8})
	// One check per shard, from the highest shard down, each with its own
	// limit so that its allowance can be told apart.
	var checks []domain.Check
	for shard := 7; shard >= 0; shard-- {
		checks = append(checks, f.onShard(t, policy(int64(10+shard), time.Minute), shard, 1)[0])
	}
	bd, err := f.limiter.CheckAll(context.Background(), checks)
	require.NoError(t, err)
	require.Equal(t, domain.Allowed, bd.Outcome())
	require.Len(t, bd.Decisions(), len(checks))
	for i, d := range bd.Decisions() {
		a, ok := d.Allowance()
		require.True(t, ok)
		require.Equal(t, checks[i].Policy().Limit(), a.Limit, "decision %d", i)
		require.Equal(t, checks[i].Policy().Limit()-1, a.Remaining, "decision %d", i)
	}
}

func TestBatchCapacityDenialNamesTheCheck(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 4, Shards: 2})
	p := policy(1, time.Minute)
	for _, c := range f.onShard(t, p, 1, 2) {
		f.allow(t, c)
	}
	f.clock.Advance(20 * time.Second)
	onZero, onOne := f.onShard(t, p, 0, 1)[0], f.onShard(t, p, 1, 3)[2]
	bd, err := f.limiter.CheckAll(context.Background(), []domain.Check{onZero, onOne})
	require.NoError(t, err)
	index, denial, ok := bd.Denied()
	require.True(t, ok)
	require.Equal(t, 1, index)
	require.Equal(t, domain.StorageCapacity, denial.Reason())
	require.Equal(t, 40*time.Second, retry(t, denial))
	// Nothing was stored on shard 0 either.
	require.Equal(t, memoryStats{Entries: 2, Headroom: []int64{2, 0}}, f.stats(t))
}

func TestNewKeysTakeFreeSlotsInCallerOrder(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 2})
	p := policy(1, time.Minute)
	f.allow(t, f.check(p, "resident"))
	first, second := f.check(p, "first"), f.check(p, "second")

	bd, err := f.limiter.CheckAll(context.Background(), []domain.Check{first, second})
	require.NoError(t, err)
	index, denial, ok := bd.Denied()
	require.True(t, ok)
	require.Equal(t, 1, index, "the first new key takes the one free slot")
	require.Equal(t, domain.StorageCapacity, denial.Reason())
	require.Equal(t, time.Minute, retry(t, denial))

	bd, err = f.limiter.CheckAll(context.Background(), []domain.Check{second, first})
	require.NoError(t, err)
	index, _, ok = bd.Denied()
	require.True(t, ok)
	require.Equal(t, 1, index)

	// Nothing was stored: either key alone fits.
	require.Equal(t, memoryStats{Entries: 1, Headroom: []int64{1}}, f.stats(t))
	f.allow(t, second)
}

func TestBatchThatCanNeverFitIsStructural(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 5, Shards: 2}) // capacities 3 and 2
	p := policy(1, time.Minute)
	resident := f.onShard(t, p, 0, 1)[0]
	f.allow(t, resident)
	before := f.stats(t)
	tests := []struct {
		name   string
		checks []domain.Check
		want   memory.ShardOverflowError
	}{
		{"three on shard 1", f.onShard(t, p, 1, 3), memory.ShardOverflowError{Shard: 1, Count: 3, Capacity: 2}},
		{"four on shard 0", f.onShard(t, p, 0, 4), memory.ShardOverflowError{Shard: 0, Count: 4, Capacity: 3}},
		{"lowest shard named first", append(f.onShard(t, p, 1, 3), f.onShard(t, p, 0, 4)...),
			memory.ShardOverflowError{Shard: 0, Count: 4, Capacity: 3}},
	}
	for _, tt := range tests {
		_, err := f.limiter.CheckAll(context.Background(), tt.checks)
		var overflow *memory.ShardOverflowError
		require.ErrorAs(t, err, &overflow, tt.name)
		require.Equal(t, tt.want, *overflow, tt.name)
		require.ErrorIs(t, err, domain.ErrInvalidBatch, tt.name)
		require.ErrorIs(t, err, domain.ErrInvalidInput, tt.name)
		require.False(t, ports.MayHaveConsumedQuota(err), tt.name)
	}
	require.Equal(t, before, f.stats(t), "a structural error touches no shard")

	// A batch that fits the capacity but not the free slots is a denial.
	bd, err := f.limiter.CheckAll(context.Background(), f.onShard(t, p, 0, 5)[2:5])
	require.NoError(t, err)
	index, denial, ok := bd.Denied()
	require.True(t, ok)
	require.Equal(t, 2, index)
	require.Equal(t, domain.StorageCapacity, denial.Reason())
}

func TestAdmitRejectsBatchesItCannotRun(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 8, MaxBatchSize: 2})
	p := policy(5, time.Minute)
	checks := []domain.Check{f.check(p, "a"), f.check(p, "b"), f.check(p, "c")}
	ctx := context.Background()

	t.Run("larger than MaxBatchSize", func(t *testing.T) {
		t.Parallel()
		b, err := domain.NewBatch(checks, 3)
		require.NoError(t, err)
		err = f.store.Admit(ctx, b)
		var be *domain.BatchError
		require.ErrorAs(t, err, &be)
		require.Equal(t, domain.BatchError{Problem: domain.BatchTooLarge, Size: 3, Max: 2}, *be)
		require.False(t, ports.MayHaveConsumedQuota(err))
	})
	t.Run("cancelled context", func(t *testing.T) {
		t.Parallel()
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		for _, n := range []int{1, 2} {
			b, err := domain.NewBatch(checks[:n], 2)
			require.NoError(t, err)
			err = f.store.Admit(cancelled, b)
			require.ErrorIs(t, err, context.Canceled)
			var op *memory.OpError
			require.ErrorAs(t, err, &op)
			require.Equal(t, "admit", op.Op)
			require.False(t, ports.MayHaveConsumedQuota(err))
		}
	})
	t.Run("out of protocol", func(t *testing.T) {
		t.Parallel()
		for _, n := range []int{1, 2} {
			b, err := domain.NewBatch([]domain.Check{f.check(p, "protocol"), f.check(p, "second")}[:n], 2)
			require.NoError(t, err)
			require.NoError(t, f.store.Admit(ctx, b))
			err = f.store.Admit(ctx, b) // already evaluated
			require.ErrorIs(t, err, domain.ErrBatchProtocol)
			require.False(t, ports.MayHaveConsumedQuota(err))
		}
		// A batch never prepared, or none at all, is the caller's mistake.
		err := f.store.Admit(ctx, new(domain.Batch))
		require.ErrorIs(t, err, domain.ErrInvalidInput)
		err = f.store.Admit(ctx, nil)
		require.ErrorIs(t, err, domain.ErrInvalidInput)
		require.False(t, ports.MayHaveConsumedQuota(err))
		// Each key was consumed once, by the first Admit only.
		d, err := f.limiter.Check(ctx, f.check(p, "protocol"))
		require.NoError(t, err)
		a, ok := d.Allowance()
		require.True(t, ok)
		require.Equal(t, int64(2), a.Remaining)
	})
}

func TestClosedStoreFailsClosed(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 8, Shards: 2})
	p := policy(5, time.Minute)
	f.allow(t, f.check(p, "a"))
	require.NoError(t, f.store.Close())
	require.NoError(t, f.store.Close(), "Close is idempotent")
	ctx := context.Background()

	_, err := f.limiter.Check(ctx, f.check(p, "a"))
	requireClosed(t, err, "admit")
	_, err = f.limiter.CheckAll(ctx, []domain.Check{f.check(p, "a"), f.check(p, "b")})
	requireClosed(t, err, "admit")
	_, err = f.store.Stats(ctx)
	requireClosed(t, err, "stats")
	_, err = f.store.CleanupExpired(ctx, 10)
	requireClosed(t, err, "cleanup")
}

func requireClosed(t *testing.T, err error, op string) {
	t.Helper()
	require.ErrorIs(t, err, memory.ErrClosed)
	var oe *memory.OpError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, op, oe.Op)
	require.False(t, ports.MayHaveConsumedQuota(err))
	require.False(t, errors.Is(err, domain.ErrInvalidInput))
}
