package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
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
