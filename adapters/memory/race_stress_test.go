package memory_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
)

// everyNthClock is a manual clock whose every nth reading panics, on
// whichever path and goroutine reads it: the optimistic path under an
// entry's lock, the locked flow under shard locks, or cleanup before any.
type everyNthClock struct {
	memory.ManualClock
	reads atomic.Int64
	every atomic.Int64 // 0: never panic
}

func (c *everyNthClock) Now() time.Duration {
	if n := c.every.Load(); n > 0 && c.reads.Add(1)%n == 0 {
		panic(testkit.TrapPanic)
	}
	return c.ManualClock.Now()
}

// Single checks (optimistic and locked), batches, cleanup, Stats and
// RecoverPoisoned race a clock that panics at every point it is read.
// Every panic must leave no lock held (the test would hang), no shard may
// ever hold more keys than its capacity or report a headroom outside
// [0, capacity], every error must be a poisoned shard's and every decision
// one of the three the rules allow; and once the clock stops panicking and
// the shards are recovered, the store accounts for every slot and counts
// exactly again. Run it with -race.
func TestPanicsRecoveryAndAdmissionsRaceWithinTheBound(t *testing.T) {
	t.Parallel()
	const (
		maxKeys  = 10
		shards   = 2
		subjects = 16 // more than the store holds: capacity denials too
		workers  = 3
		rounds   = 1000 // per worker
	)
	clock := new(everyNthClock)
	clock.every.Store(11)
	f := setup(t, memory.Config{MaxKeys: maxKeys, Shards: shards, CleanupPerCheck: 1, Clock: clock})
	ctx := context.Background()
	p := policy(3, time.Second)
	var checks []domain.Check
	for i := range subjects {
		checks = append(checks, f.check(p, fmt.Sprintf("subject-%d", i)))
	}
	capacity := []int64{maxKeys / shards, maxKeys / shards}

	var (
		mu       sync.Mutex
		problems []string
		panics   atomic.Int64
	)
	report := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// guard runs op and counts the clock's panic; any other panic is a
	// problem.
	guard := func(op func()) {
		defer func() {
			if v := recover(); v != nil {
				if v != testkit.TrapPanic {
					report("unexpected panic: %v", v)
				}
				panics.Add(1)
			}
		}()
		op()
	}
	// checkErr accepts a poisoned shard's error and recovers the shard, as
	// an operator would, so that the race goes on.
	checkErr := func(err error) {
		switch {
		case errors.Is(err, memory.ErrPoisoned):
			f.store.RecoverPoisoned()
		case err != nil:
			report("unexpected error: %v", err)
		}
	}
	checkDecision := func(d domain.Decision) {
		if d.Outcome() == domain.Allowed {
			return
		}
		den, ok := d.Denial()
		if !ok || d.Outcome() != domain.Denied || (den.Reason() != domain.QuotaExhausted && den.Reason() != domain.StorageCapacity) {
			report("unexpected decision: %v", d.Outcome())
		}
	}

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { // single checks
			for n := range rounds {
				guard(func() {
					d, err := f.store.AdmitCheck(ctx, checks[(n*(w+1))%subjects])
					checkErr(err)
					if err == nil {
						checkDecision(d)
					}
				})
			}
		})
	}
	wg.Go(func() { // batches of two
		b := new(domain.Batch)
		for n := range rounds {
			guard(func() {
				i := n % subjects
				if err := b.Reset([]domain.Check{checks[i], checks[(i+5)%subjects]}, 2); err != nil {
					report("reset: %v", err)
					return
				}
				err := f.store.Admit(ctx, b)
				checkErr(err)
				if err == nil {
					bd, err := b.Decision()
					if err != nil {
						report("batch decision: %v", err)
						return
					}
					for _, d := range bd.Decisions() {
						checkDecision(d)
					}
				}
			})
		}
	})
	wg.Go(func() { // maintenance: time, cleanup, stats, recovery
		for range rounds {
			clock.Advance(300 * time.Millisecond)
			guard(func() {
				_, err := f.store.CleanupExpired(ctx, 2)
				checkErr(err)
			})
			st, err := f.store.Stats(ctx)
			if err != nil {
				report("stats: %v", err)
				continue
			}
			if st.Entries < 0 || st.Entries > maxKeys {
				report("%d entries in a store of %d", st.Entries, maxKeys)
			}
			for i, h := range st.Headroom {
				if h < 0 || h > capacity[i] {
					report("shard %d reports a headroom of %d, capacity %d", i, h, capacity[i])
				}
			}
			f.store.RecoverPoisoned()
		}
	})
	wg.Wait()
	require.Empty(t, problems)
	require.Positive(t, panics.Load(), "the clock never panicked")

	// Settled: no panics, every shard recovered, every slot accounted for.
	clock.every.Store(0)
	f.store.RecoverPoisoned()
	require.Nil(t, f.store.PoisonedShards())
	st := f.stats(t)
	require.Equal(t, int64(maxKeys), st.Entries+st.Headroom[0]+st.Headroom[1])

	// Every window ends; cleanup empties the store, which then counts
	// exactly: each key its limit, then a quota denial.
	clock.Advance(time.Hour)
	removed, err := f.store.CleanupExpired(ctx, maxKeys)
	require.NoError(t, err)
	require.Equal(t, int(st.Entries), removed)
	require.Equal(t, memoryStats{Entries: 0, Headroom: capacity}, f.stats(t))
	c := checks[0]
	for range 3 {
		f.allow(t, c)
	}
	f.deny(t, c, domain.QuotaExhausted)
}

// Close races single checks of stored keys, which take the optimistic
// path, and checks of new keys: none hangs or panics, each worker sees
// ErrClosed from some point on and only from then, and before that no
// key was admitted beyond its limit.
func TestCloseRacesOptimisticChecks(t *testing.T) {
	t.Parallel()
	const (
		workers = 4
		limit   = 50
	)
	f := setup(t, memory.Config{MaxKeys: 64, Shards: 4})
	ctx := context.Background()
	p := policy(limit, time.Hour)
	var stored []domain.Check
	for i := range workers {
		c := f.check(p, fmt.Sprintf("stored-%d", i))
		f.allow(t, c)
		stored = append(stored, c)
	}
	var (
		allowed  [workers]atomic.Int64
		problems = make(chan string, workers*4)
		started  sync.WaitGroup
		wg       sync.WaitGroup
	)
	for w := range workers {
		started.Add(1)
		wg.Go(func() {
			closed := false
			for n := 0; ; n++ {
				if n == 10 {
					started.Done()
				}
				c := stored[w]
				if n%5 == 4 {
					c = f.check(p, fmt.Sprintf("new-%d-%d", w, n))
				}
				d, err := f.store.AdmitCheck(ctx, c)
				switch {
				case errors.Is(err, memory.ErrClosed):
					closed = true
				case err != nil:
					problems <- fmt.Sprintf("worker %d: %v", w, err)
					return
				case closed:
					problems <- fmt.Sprintf("worker %d: a check succeeded after ErrClosed", w)
					return
				case d.Outcome() == domain.Allowed && c == stored[w]:
					allowed[w].Add(1)
				}
				if closed && n%5 == 4 {
					return // it has seen both kinds of check fail closed
				}
			}
		})
	}
	started.Wait()
	require.NoError(t, f.store.Close())
	wg.Wait()
	close(problems)
	for p := range problems {
		t.Error(p)
	}
	for w := range workers {
		require.LessOrEqual(t, allowed[w].Load()+1, int64(limit), "worker %d's key", w)
	}
	_, err := f.store.Stats(ctx)
	require.ErrorIs(t, err, memory.ErrClosed)
}
