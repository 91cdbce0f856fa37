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

// The benchmarks go through app.Limiter, as an application would, on the
// process's real monotonic clock. Their policies have the largest limit and
// window, so every check is allowed: they measure the path that reads,
// evaluates and writes a counter, not the cheaper denial.

// benchPolicy allows every check the benchmark makes.
var benchPolicy = domain.MustPolicy("bench.memory", "subject", domain.MaxLimit, domain.MaxWindow)

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

func BenchmarkCheckHotKey(b *testing.B) {
	_, limiter := benchLimiter(b, memory.Config{MaxKeys: 1})
	check := benchChecks(b, 1)[0]
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, err := limiter.Check(ctx, check)
		requireAllowed(b, d, err)
	}
}

// BenchmarkStoreHotKey is BenchmarkCheckHotKey without the limiter: the
// store's own share of a check.
func BenchmarkStoreHotKey(b *testing.B) {
	store, _ := benchLimiter(b, memory.Config{MaxKeys: 1})
	check := benchChecks(b, 1)[0]
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, err := store.AdmitCheck(ctx, check)
		requireAllowed(b, d, err)
	}
}

func BenchmarkCheckKeys10k(b *testing.B) {
	const keys = 10_000
	store, limiter := benchLimiter(b, memory.Config{MaxKeys: keys})
	checks := benchChecks(b, keys)
	ctx := context.Background()
	for _, c := range checks {
		d, err := limiter.Check(ctx, c)
		requireAllowed(b, d, err)
	}
	st, err := store.Stats(ctx)
	require.NoError(b, err)
	require.Equal(b, int64(keys), st.Entries, "the store must hold every benchmark key")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d, err := limiter.Check(ctx, checks[i])
		requireAllowed(b, d, err)
		if i++; i == keys {
			i = 0
		}
	}
}

func BenchmarkCheckParallel(b *testing.B) {
	const (
		shards = 64
		shares = 64   // key sets, one per goroutine up to 64 goroutines
		keys   = 1024 // per share
	)
	// Room for twice the keys: shards fill unevenly.
	store, limiter := benchLimiter(b, memory.Config{MaxKeys: 2 * shares * keys, Shards: shards})
	checks := benchChecks(b, shares*keys)
	ctx := context.Background()
	// Every key is stored before timing starts, so the benchmark measures
	// the steady state, not map growth.
	for _, c := range checks {
		d, err := limiter.Check(ctx, c)
		requireAllowed(b, d, err)
	}
	st, err := store.Stats(ctx)
	require.NoError(b, err)
	require.Equal(b, int64(shares*keys), st.Entries, "the store must hold every benchmark key")

	var share atomic.Int32
	b.ReportAllocs()
	b.ResetTimer() // RunParallel, unlike b.Loop, does not leave the setup out
	b.RunParallel(func(pb *testing.PB) {
		// Each goroutine takes its own keys; with more goroutines than
		// shares (GOMAXPROCS above 64), later ones share.
		g := int(share.Add(1)-1) % shares
		mine := checks[g*keys : (g+1)*keys]
		i := 0
		for pb.Next() {
			d, err := limiter.Check(ctx, mine[i])
			if err != nil || d.Outcome() != domain.Allowed {
				panic(fmt.Sprintf("want allowed, got %v (%v)", d.Outcome(), err))
			}
			if i++; i == len(mine) {
				i = 0
			}
		}
	})
}

func BenchmarkCheckAllPair(b *testing.B) {
	store, limiter := benchLimiter(b, memory.Config{MaxKeys: 64, Shards: 8})
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
}
