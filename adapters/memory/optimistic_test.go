package memory_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
)

// A single check of a stored key in an active window takes only its
// entry's lock: it completes while another goroutine holds the shard's
// lock to read the shard, as Stats does. A check that needs the shard (a
// new key) completes once the lock is released.
func TestActiveKeyCheckDoesNotWaitForTheShardLock(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 8})
	ctx := context.Background()
	p := policy(3, time.Minute)
	stored, fresh := f.check(p, "stored"), f.check(p, "fresh")
	f.allow(t, stored)

	// Without the optimistic path these checks would wait for the lock
	// forever, and the test would fail by its timeout.
	release := f.store.HoldShard(0)
	require.Equal(t, int64(1), f.allow(t, stored).Remaining, "counted while the shard is held")
	require.Equal(t, int64(0), f.allow(t, stored).Remaining, "counted while the shard is held")
	f.deny(t, stored, domain.QuotaExhausted)

	type result struct {
		d   domain.Decision
		err error
	}
	waiting := make(chan result, 1)
	go func() {
		d, err := f.limiter.Check(ctx, fresh)
		waiting <- result{d, err}
	}()
	// The new key's check must not finish while the shard is held. This
	// only catches it if it already has; nothing here waits on a clock.
	select {
	case r := <-waiting:
		t.Fatalf("a new key's check finished while its shard was held: %v %v", r.d.Outcome(), r.err)
	default:
	}
	release()
	r := <-waiting
	require.NoError(t, r.err)
	require.Equal(t, domain.Allowed, r.d.Outcome())
	require.Equal(t, memoryStats{Entries: 2, Headroom: []int64{6}}, f.stats(t))
}

// Optimistic single checks race batches over the same keys while other
// keys on the same shards are added, expire and are removed (index growth,
// shifted cells, reused slots, a moving heap): every accounted key admits
// exactly its limit, whichever path each check took. Run it with -race.
func TestOptimisticChecksRaceBatchesAndChurnWithoutMiscounting(t *testing.T) {
	t.Parallel()
	const (
		shards    = 2
		accounted = 8   // keys with a limit that all workers exhaust
		limit     = 300 // per accounted key
		workers   = 4
		attempts  = 800 // per worker: the single checks alone exceed every limit
	)
	// The clock yields whenever it is read, which every admission does
	// while it holds its locks (an optimistic check, its entry's), so that
	// batches and cleanup reach a held entry. The rules that keep an
	// optimistic check out of a locked admission are pinned down one by one
	// in TestOptimisticPathStepsAside; this test runs them together, and
	// under -race it also checks who reads and writes what.
	clock := yieldingClock{memory.NewManualClock()}
	f := setup(t, memory.Config{MaxKeys: 4096, Shards: shards, Clock: clock})
	ctx := context.Background()
	long := policy(limit, time.Hour)
	var keys []domain.Check
	for shard := range shards {
		keys = append(keys, f.onShard(t, long, shard, accounted/shards)...)
	}
	for _, c := range keys {
		f.allow(t, c) // stored: later single checks may take the optimistic path
	}

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		allowed = make(map[int]int, accounted) // per key, including the first check
		errs    []error
	)
	for i := range keys {
		allowed[i] = 1
	}
	count := func(i int) {
		mu.Lock()
		allowed[i]++
		mu.Unlock()
	}
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for w := range workers {
		wg.Go(func() { // single checks
			for n := range attempts {
				i := (n + w) % len(keys)
				d, err := f.limiter.Check(ctx, keys[i])
				if err != nil {
					fail(err)
					return
				}
				if d.Outcome() == domain.Allowed {
					count(i)
				}
			}
		})
		wg.Go(func() { // batches of two accounted keys on different shards
			for n := range attempts / 2 {
				i, j := (n+w)%(accounted/shards), accounted/shards+(n+2*w)%(accounted/shards)
				bd, err := f.limiter.CheckAll(ctx, []domain.Check{keys[i], keys[j]})
				if err != nil {
					fail(err)
					return
				}
				if bd.Outcome() == domain.Allowed {
					count(i)
					count(j)
				}
			}
		})
	}
	// Churn: short-lived keys come, expire as the clock moves, and are
	// removed by checks and by cleanup, on the accounted keys' shards.
	short := domain.MustPolicy("test.memory", "churn", 1, time.Second)
	wg.Go(func() {
		for round := range 60 {
			for k := range 40 {
				c := f.check(short, string(rune('a'+round%26))+string(rune('A'+k))+string(rune('0'+round/26)))
				if _, err := f.limiter.Check(ctx, c); err != nil {
					fail(err)
					return
				}
			}
			clock.Advance(2 * time.Second) // the churn keys expire; the accounted keys do not
			if _, err := f.store.CleanupExpired(ctx, 16); err != nil {
				fail(err)
				return
			}
		}
	})
	wg.Wait()
	require.Empty(t, errs)
	for i, c := range keys {
		require.Equal(t, limit, allowed[i], "key %d admitted other than its limit", i)
		f.deny(t, c, domain.QuotaExhausted)
	}
}

// yieldingClock is a ManualClock that lets other goroutines run each time
// it is read.
type yieldingClock struct{ *memory.ManualClock }

func (c yieldingClock) Now() time.Duration {
	runtime.Gosched()
	return c.ManualClock.Now()
}
