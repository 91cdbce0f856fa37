package memory_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
)

// outcome is what a goroutine saw, sent to the test goroutine to assert on.
type outcome struct {
	allowed bool
	err     error
}

func TestConcurrentChecksOnOneKeyAdmitExactlyTheLimit(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 4})
	c := f.check(policy(25, time.Minute), "contended")
	results := make(chan outcome, 100)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			d, err := f.limiter.Check(context.Background(), c)
			results <- outcome{allowed: d.Outcome() == domain.Allowed, err: err}
		})
	}
	wg.Wait()
	close(results)
	allowed := 0
	for r := range results {
		require.NoError(t, r.err)
		if r.allowed {
			allowed++
		}
	}
	require.Equal(t, 25, allowed)
	f.deny(t, c, domain.QuotaExhausted)
}

func TestOppositeOrderBatchesNeitherDeadlockNorMiscount(t *testing.T) {
	t.Parallel()
	const (
		goroutines = 8
		rounds     = 200
		limit      = 1000 // below goroutines*rounds: some batches are denied
	)
	f := setup(t, memory.Config{MaxKeys: 64, Shards: 16})
	p := policy(limit, time.Hour)
	var keys []domain.Check
	for shard := range 4 {
		keys = append(keys, f.onShard(t, p, shard*4, 1)[0])
	}
	reversed := slices.Clone(keys)
	slices.Reverse(reversed)

	results := make(chan outcome, goroutines*rounds)
	var wg sync.WaitGroup
	for g := range goroutines {
		batch := keys
		if g%2 == 1 {
			batch = reversed
		}
		wg.Go(func() {
			for range rounds {
				bd, err := f.limiter.CheckAll(context.Background(), batch)
				results <- outcome{allowed: bd.Outcome() == domain.Allowed, err: err}
			}
		})
	}
	wg.Wait()
	close(results)
	allowed := 0
	for r := range results {
		require.NoError(t, r.err)
		if r.allowed {
			allowed++
		}
	}
	require.Equal(t, limit, allowed)
	// All or nothing: every key was consumed by exactly the allowed batches.
	for i, c := range keys {
		require.Equal(t, time.Hour, retry(t, f.deny(t, c, domain.QuotaExhausted)), "key %d", i)
	}
}

func TestConcurrentNewKeysNeverExceedCapacity(t *testing.T) {
	t.Parallel()
	const (
		goroutines = 8
		pairs      = 20 // per goroutine
	)
	f := setup(t, memory.Config{MaxKeys: 50, Shards: 4})
	capacity := []int64{13, 13, 12, 12}
	p := policy(1, time.Hour)
	type admitted struct {
		shards []int // shards of an allowed pair's keys, nil when denied
		err    error
	}
	results := make(chan admitted, goroutines*pairs)
	var wg sync.WaitGroup
	for g := range goroutines {
		var batches [][]domain.Check
		for i := range pairs {
			batches = append(batches, []domain.Check{
				f.check(p, fmt.Sprintf("g%d-pair%d-a", g, i)),
				f.check(p, fmt.Sprintf("g%d-pair%d-b", g, i)),
			})
		}
		wg.Go(func() {
			// Pairs, so that batches compete for slots on two shards.
			for _, batch := range batches {
				bd, err := f.limiter.CheckAll(context.Background(), batch)
				r := admitted{err: err}
				if bd.Outcome() == domain.Allowed {
					for _, c := range batch {
						r.shards = append(r.shards, f.store.ShardOf(c.CounterKey()))
					}
				}
				results <- r
			}
		})
	}
	wg.Wait()
	close(results)
	stored := make([]int64, 4)
	for r := range results {
		require.NoError(t, r.err)
		for _, shard := range r.shards {
			stored[shard]++
		}
	}
	// Every allowed key holds exactly one slot, and no shard went over.
	st := f.stats(t)
	for shard := range stored {
		require.LessOrEqual(t, stored[shard], capacity[shard], "shard %d", shard)
		require.Equal(t, capacity[shard]-stored[shard], st.Headroom[shard], "shard %d", shard)
	}
	require.Positive(t, st.Entries)
}
