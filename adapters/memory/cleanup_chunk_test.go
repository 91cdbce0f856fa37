package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/ports"
)

// statsContext is a live context whose Err reads the store's Stats and
// records its entry count. Stats takes every shard's lock, so each Err
// call shows that no lock was held while the caller asked, and how many
// entries the caller had left at that point.
type statsContext struct {
	context.Context
	store   *memory.Store
	entries []int64
}

func (c *statsContext) Err() error {
	st, err := c.store.Stats(context.Background())
	if err != nil {
		return err
	}
	c.entries = append(c.entries, st.Entries)
	return nil
}

// expiredBacklog fills a single-shard store with n counters that have all
// expired, and returns its fixture.
func expiredBacklog(t *testing.T, n int) fixture {
	t.Helper()
	f := setup(t, memory.Config{MaxKeys: n})
	short := policy(1, time.Second)
	for i := range n {
		f.allow(t, f.check(short, fmt.Sprintf("backlog-%d", i)))
	}
	f.clock.Advance(time.Second)
	return f
}

// A cleanup of a backlog larger than a chunk releases the shard's lock
// after every chunk: between chunks, other callers take the lock (Stats
// here, which would otherwise wait for the whole backlog) and find the
// backlog shrunk by exactly one chunk each time.
func TestCleanupExpiredReleasesTheShardBetweenChunks(t *testing.T) {
	t.Parallel()
	const chunk = memory.CleanupChunk
	tests := []struct {
		name    string
		backlog int
		max     int
		entries []int64 // what Stats saw at each ctx check, the first one before the sweep
	}{
		{"a large backlog", 3*chunk + 5, 1 << 30, []int64{3*chunk + 5, 2*chunk + 5, chunk + 5, 5}},
		{"a budget of whole chunks", 3*chunk + 5, 2 * chunk, []int64{3*chunk + 5, 2*chunk + 5}},
		{"a budget inside one chunk", 3*chunk + 5, chunk - 1, []int64{3*chunk + 5}},
		{"a backlog of exactly one chunk", chunk, 1 << 30, []int64{chunk, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := expiredBacklog(t, tt.backlog)
			ctx := &statsContext{Context: context.Background(), store: f.store}
			n, err := f.store.CleanupExpired(ctx, tt.max)
			require.NoError(t, err)
			require.Equal(t, min(tt.backlog, tt.max), n)
			require.Equal(t, tt.entries, ctx.entries)
			require.Equal(t, int64(tt.backlog-n), f.stats(t).Entries)
		})
	}
}

// A context that ends between two chunks on one shard stops the sweep
// there: the chunk removed so far stays removed, and its count comes back
// with the context's error.
func TestCleanupExpiredStopsBetweenChunksWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	const chunk = memory.CleanupChunk
	f := expiredBacklog(t, 3*chunk)
	ctx := &endingContext{Context: context.Background()}
	ctx.live.Store(1) // the check before the sweep
	n, err := f.store.CleanupExpired(ctx, 1<<30)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ports.MayHaveConsumedQuota(err))
	require.Equal(t, chunk, n)
	require.Equal(t, int64(2*chunk), f.stats(t).Entries)
}
