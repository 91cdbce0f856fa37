package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
)

func TestCapacityIsSplitAcrossShards(t *testing.T) {
	t.Parallel()
	tests := []struct {
		maxKeys, shards int
		want            []int64
	}{
		{10, 4, []int64{3, 3, 2, 2}},
		{8, 4, []int64{2, 2, 2, 2}},
		{7, 7, []int64{1, 1, 1, 1, 1, 1, 1}},
		{5, 1, []int64{5}},
		{11, 3, []int64{4, 4, 3}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d keys on %d shards", tt.maxKeys, tt.shards), func(t *testing.T) {
			t.Parallel()
			f := setup(t, memory.Config{MaxKeys: tt.maxKeys, Shards: tt.shards})
			st, err := f.store.Stats(context.Background())
			require.NoError(t, err)
			require.Equal(t, tt.want, st.Headroom)
			require.Equal(t, int64(tt.maxKeys), st.Capacity)
			require.Equal(t, tt.shards, st.Shards)
			require.Equal(t, int64(0), st.Entries)

			// Every shard takes exactly its share and not one key more.
			p := policy(1, time.Minute)
			for shard, share := range tt.want {
				checks := f.onShard(t, p, shard, int(share)+1)
				for _, c := range checks[:share] {
					f.allow(t, c)
				}
				f.deny(t, checks[share], domain.StorageCapacity)
			}
			require.Equal(t, memoryStats{Entries: int64(tt.maxKeys), Headroom: make([]int64, tt.shards)}, f.stats(t))
		})
	}
}

func TestFullShardDeniesNewKeyWithEarliestRetry(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 4, Shards: 2})
	long, short := policy(5, 10*time.Second), policy(5, 4*time.Second)
	first := f.onShard(t, long, 0, 1)[0]
	second := f.onShard(t, short, 0, 1)[0]
	f.allow(t, first)
	f.clock.Advance(time.Second)
	f.allow(t, second) // expires at 5 s, before first at 10 s
	f.clock.Advance(2 * time.Second)

	newcomer := f.onShard(t, long, 0, 3)[2]
	d := f.deny(t, newcomer, domain.StorageCapacity)
	require.Equal(t, 2*time.Second, retry(t, d), "retry when the earliest entry of the shard expires")
	secs, ok := d.RetryAfterSeconds()
	require.True(t, ok)
	require.Equal(t, int64(2), secs)

	// The other shard has room all along, and the denial stored nothing.
	f.allow(t, f.onShard(t, long, 1, 1)[0])
	require.False(t, f.store.Holds(newcomer.CounterKey()))

	// Active entries are never evicted: both keep their windows.
	a := f.allow(t, first)
	require.Equal(t, int64(3), a.Remaining)
	require.Equal(t, 7*time.Second, a.ResetAfter)
	a = f.allow(t, second)
	require.Equal(t, int64(3), a.Remaining)
	require.Equal(t, 2*time.Second, a.ResetAfter)

	// At the earliest expiry the slot frees and the newcomer gets it.
	f.clock.Advance(2 * time.Second)
	f.allow(t, newcomer)
	require.False(t, f.store.Holds(second.CounterKey()))
	require.True(t, f.store.Holds(first.CounterKey()))
}

func TestExpiredEntryIsRenewedInPlace(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 3, CleanupPerCheck: 1})
	older := f.check(policy(5, time.Second), "older")
	renewed := f.check(policy(5, 2*time.Second), "renewed")
	active := f.check(policy(5, time.Hour), "active")
	f.allow(t, older)
	f.allow(t, renewed)
	f.allow(t, active)
	f.clock.Advance(3 * time.Second)

	// The check's allowance of one removes the oldest expired entry; its own
	// expired entry is still there and becomes a fresh window in place.
	a := f.allow(t, renewed)
	require.Equal(t, int64(4), a.Remaining)
	require.Equal(t, 2*time.Second, a.ResetAfter)
	require.False(t, f.store.Holds(older.CounterKey()))
	require.True(t, f.store.Holds(renewed.CounterKey()))
	require.Equal(t, memoryStats{Entries: 2, Headroom: []int64{1}}, f.stats(t))
}

func TestCheckRemovesExpiredEntriesOldestFirstUpToItsAllowance(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 10, CleanupPerCheck: 2})
	var expired []domain.Check
	for i := range 5 {
		// Windows of 1 s to 5 s: expired[i] is the i-th oldest expiry.
		c := f.check(policy(1, time.Duration(i+1)*time.Second), "expired")
		f.allow(t, c)
		expired = append(expired, c)
	}
	f.clock.Advance(time.Minute)
	probe := f.check(policy(100, time.Hour), "probe")

	for _, step := range []struct {
		entries int64
		kept    int // expired[kept:] are still stored
	}{
		{entries: 4, kept: 2}, // five expired, two removed, the probe added
		{entries: 2, kept: 4},
		{entries: 1, kept: 5},
		{entries: 1, kept: 5}, // nothing left to remove
	} {
		f.allow(t, probe)
		require.Equal(t, step.entries, f.stats(t).Entries)
		for i, c := range expired {
			require.Equal(t, i >= step.kept, f.store.Holds(c.CounterKey()), "entry %d", i)
		}
	}
}

func TestBatchGetsCleanupAllowancePerCheckOnItsShard(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 20, Shards: 2, CleanupPerCheck: 1})
	short := policy(1, time.Second)
	for shard := range 2 {
		for _, c := range f.onShard(t, short, shard, 4) {
			f.allow(t, c)
		}
	}
	f.clock.Advance(time.Second)
	long := policy(1, time.Hour)
	onZero := f.onShard(t, long, 0, 3)
	onOne := f.onShard(t, long, 1, 1)

	// Two checks on shard 0: two removals there, none on shard 1.
	bd, err := f.limiter.CheckAll(context.Background(), onZero[:2])
	require.NoError(t, err)
	require.Equal(t, domain.Allowed, bd.Outcome())
	require.Equal(t, memoryStats{Entries: 8, Headroom: []int64{6, 6}}, f.stats(t))

	// One check on each shard: one removal on each.
	bd, err = f.limiter.CheckAll(context.Background(), []domain.Check{onZero[2], onOne[0]})
	require.NoError(t, err)
	require.Equal(t, domain.Allowed, bd.Outcome())
	require.Equal(t, memoryStats{Entries: 8, Headroom: []int64{6, 6}}, f.stats(t))

	// A denied batch still spends its allowance: cleanup is not quota.
	bd, err = f.limiter.CheckAll(context.Background(), []domain.Check{onOne[0], onZero[0]})
	require.NoError(t, err)
	require.Equal(t, domain.Denied, bd.Outcome())
	require.Equal(t, memoryStats{Entries: 6, Headroom: []int64{7, 7}}, f.stats(t))
}

func TestCleanupExpiredIsBoundedByMax(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 40, Shards: 4})
	short, long := policy(1, time.Second), policy(1, time.Hour)
	for shard := range 4 {
		for _, c := range f.onShard(t, short, shard, 2) {
			f.allow(t, c)
		}
		f.allow(t, f.onShard(t, long, shard, 1)[0])
	}
	ctx := context.Background()
	n, err := f.store.CleanupExpired(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, 0, n, "nothing has expired yet")

	f.clock.Advance(time.Second)
	for _, step := range []struct{ max, removed, entries int }{
		{0, 0, 12},
		{3, 3, 9},
		{1, 1, 8},
		{100, 4, 4},
		{100, 0, 4}, // the active entries stay
	} {
		n, err := f.store.CleanupExpired(ctx, step.max)
		require.NoError(t, err)
		require.Equal(t, step.removed, n, "max %d", step.max)
		require.Equal(t, int64(step.entries), f.stats(t).Entries)
	}

	_, err = f.store.CleanupExpired(ctx, -1)
	require.ErrorIs(t, err, memory.ErrNegativeMax)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = f.store.CleanupExpired(cancelled, 1)
	require.ErrorIs(t, err, context.Canceled)
}
