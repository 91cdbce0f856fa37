package memory_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// The benchmarks go through app.Limiter, as an application would. Each runs
// on the default clock (the process's monotonic clock, read on every
// admission) and on a memory.CoarseClock (read from memory, advanced once a
// millisecond). Their policies have the largest limit and window, so every
// check is allowed: they measure the path that reads, evaluates and writes
// a counter, not the cheaper denial.

// benchPolicy allows every check the benchmark makes.
var benchPolicy = domain.MustPolicy("bench.memory", "subject", domain.MaxLimit, domain.MaxWindow)

// clocks runs bench once per clock, with cfg.Clock set accordingly.
func clocks(b *testing.B, bench func(b *testing.B, clock memory.Clock)) {
	b.Run("clock=default", func(b *testing.B) { bench(b, nil) })
	b.Run("clock=coarse", func(b *testing.B) {
		c := memory.NewCoarseClock()
		b.Cleanup(c.Stop)
		bench(b, c)
	})
}

func benchLimiter(b *testing.B, cfg memory.Config) (*memory.Store, *app.Limiter) {
	b.Helper()
	store, err := memory.New(cfg)
	require.NoError(b, err)
	b.Cleanup(func() { _ = store.Close() })
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	require.NoError(b, err)
	return store, limiter
}

// benchChecks returns n checks with distinct subjects, and requires their
// counter keys to be distinct too.
func benchChecks(b *testing.B, n int) []domain.Check {
	b.Helper()
	hasher := newHasher(b)
	checks := make([]domain.Check, n)
	seen := make(map[domain.CounterKey]struct{}, n)
	for i := range checks {
		checks[i] = domain.NewCheck(benchPolicy, hasher.KeyString(benchPolicy, fmt.Sprintf("subject-%d", i)))
		seen[checks[i].CounterKey()] = struct{}{}
	}
	require.Len(b, seen, n, "subjects must map to distinct counter keys")
	return checks
}

func requireAllowed(b *testing.B, d domain.Decision, err error) {
	if err != nil || d.Outcome() != domain.Allowed {
		b.Fatalf("want allowed, got %v (%v)", d.Outcome(), err)
	}
}

// storeAll checks every key once so the benchmark measures the steady
// state, not map growth, and requires the store to hold them all.
func storeAll(b *testing.B, store *memory.Store, limiter *app.Limiter, checks []domain.Check) {
	b.Helper()
	ctx := context.Background()
	for _, c := range checks {
		d, err := limiter.Check(ctx, c)
		requireAllowed(b, d, err)
	}
	st, err := store.Stats(ctx)
	require.NoError(b, err)
	require.Equal(b, int64(len(checks)), st.Entries, "the store must hold every benchmark key")
}

// BenchmarkCheckHotKey checks one key over and over.
func BenchmarkCheckHotKey(b *testing.B) {
	clocks(b, func(b *testing.B, clock memory.Clock) {
		_, limiter := benchLimiter(b, memory.Config{MaxKeys: 1, Clock: clock})
		check := benchChecks(b, 1)[0]
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			d, err := limiter.Check(ctx, check)
			requireAllowed(b, d, err)
		}
	})
}

// BenchmarkStoreHotKey is BenchmarkCheckHotKey without the limiter: the
// store's own share of a check.
func BenchmarkStoreHotKey(b *testing.B) {
	clocks(b, func(b *testing.B, clock memory.Clock) {
		store, _ := benchLimiter(b, memory.Config{MaxKeys: 1, Clock: clock})
		check := benchChecks(b, 1)[0]
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			d, err := store.AdmitCheck(ctx, check)
			requireAllowed(b, d, err)
		}
	})
}

// BenchmarkCheckKeys10k checks 10,000 stored keys round-robin.
func BenchmarkCheckKeys10k(b *testing.B) {
	clocks(b, func(b *testing.B, clock memory.Clock) {
		const keys = 10_000
		store, limiter := benchLimiter(b, memory.Config{MaxKeys: keys, Clock: clock})
		checks := benchChecks(b, keys)
		storeAll(b, store, limiter, checks)
		ctx := context.Background()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			d, err := limiter.Check(ctx, checks[i])
			requireAllowed(b, d, err)
			if i++; i == keys {
				i = 0
			}
		}
	})
}

// BenchmarkCheckParallel runs checks from GOMAXPROCS goroutines on a
// 64-shard store in two shapes:
//   - hot: each goroutine checks its own key, each key on its own shard, as
//     a per-client hot path does;
//   - spread: each goroutine cycles through 1,024 keys of its own, spread
//     over every shard, so goroutines keep taking shard locks the other
//     core touched last, and the cache lines move with them.
func BenchmarkCheckParallel(b *testing.B) {
	const shards = 64
	b.Run("keys=hot", func(b *testing.B) {
		clocks(b, func(b *testing.B, clock memory.Clock) {
			store, limiter := benchLimiter(b, memory.Config{MaxKeys: 4 * shards, Shards: shards, Clock: clock})
			// One key per shard, found among more candidates than shards.
			var hot []domain.Check
			used := map[int]bool{}
			for _, c := range benchChecks(b, 8*shards) {
				if s := store.ShardOf(c.CounterKey()); !used[s] {
					used[s] = true
					hot = append(hot, c)
				}
			}
			require.GreaterOrEqual(b, len(hot), 2, "need keys on two shards")
			storeAll(b, store, limiter, hot)
			parallel(b, limiter, func(g int) []domain.Check { return hot[g%len(hot) : g%len(hot)+1] })
		})
	})
	b.Run("keys=spread", func(b *testing.B) {
		clocks(b, func(b *testing.B, clock memory.Clock) {
			const shares, keys = 64, 1024 // key sets: one per goroutine, up to 64 goroutines
			// Room for twice the keys: shards fill unevenly.
			store, limiter := benchLimiter(b, memory.Config{MaxKeys: 2 * shares * keys, Shards: shards, Clock: clock})
			checks := benchChecks(b, shares*keys)
			storeAll(b, store, limiter, checks)
			parallel(b, limiter, func(g int) []domain.Check {
				g %= shares
				return checks[g*keys : (g+1)*keys]
			})
		})
	})
}

// parallel runs checks from b.RunParallel's goroutines, goroutine g cycling
// through mine(g).
func parallel(b *testing.B, limiter *app.Limiter, mine func(g int) []domain.Check) {
	ctx := context.Background()
	var next atomic.Int32
	b.ReportAllocs()
	b.ResetTimer() // RunParallel, unlike b.Loop, does not leave the setup out
	b.RunParallel(func(pb *testing.PB) {
		checks := mine(int(next.Add(1) - 1))
		i := 0
		for pb.Next() {
			d, err := limiter.Check(ctx, checks[i])
			if err != nil || d.Outcome() != domain.Allowed {
				panic(fmt.Sprintf("want allowed, got %v (%v)", d.Outcome(), err))
			}
			if i++; i == len(checks) {
				i = 0
			}
		}
	})
}

// BenchmarkCheckAllPair checks a batch of two keys on different shards.
func BenchmarkCheckAllPair(b *testing.B) {
	clocks(b, func(b *testing.B, clock memory.Clock) {
		store, limiter := benchLimiter(b, memory.Config{MaxKeys: 64, Shards: 8, Clock: clock})
		checks := benchChecks(b, 64)
		pair := []domain.Check{checks[0]}
		for _, c := range checks[1:] {
			if store.ShardOf(c.CounterKey()) != store.ShardOf(pair[0].CounterKey()) {
				pair = append(pair, c)
				break
			}
		}
		require.Len(b, pair, 2, "no second shard among the benchmark keys")
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			bd, err := limiter.CheckAll(ctx, pair)
			if err != nil || bd.Outcome() != domain.Allowed {
				b.Fatalf("want allowed, got %v (%v)", bd.Outcome(), err)
			}
		}
	})
}
