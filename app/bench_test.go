package app_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// The limiter's benchmarks measure what the service adds to a memory
// store: nothing without an observer, the event and two clock reads with
// one. Every check is allowed (the largest limit and window), so each
// reads, evaluates and writes a counter; subjects cycle through 1,024
// distinct keys so that the store's table is not a single hot entry.

var benchPolicy = domain.MustPolicy("bench.app", "subject", domain.MaxLimit, domain.MaxWindow)

// benchObservers are the observers each benchmark runs with.
var benchObservers = []struct {
	name     string
	observer app.Observer
}{
	{"observer=none", nil},
	{"observer=func", app.ObserverFunc(func(app.Event) {})},
}

func benchSetup(b *testing.B, observer app.Observer) (*app.Limiter, []domain.Check) {
	b.Helper()
	store, err := memory.New(memory.Config{MaxKeys: 1 << 16, Shards: 16})
	require.NoError(b, err)
	b.Cleanup(func() { _ = store.Close() })
	limiter, err := app.NewLimiter(store, app.LimiterConfig{Observer: observer, Name: "bench"})
	require.NoError(b, err)
	hasher, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(b, err)
	checks := make([]domain.Check, 1024)
	seen := make(map[domain.CounterKey]struct{}, len(checks))
	for i := range checks {
		checks[i] = domain.NewCheck(benchPolicy, hasher.KeyString(benchPolicy, fmt.Sprintf("subject-%d", i)))
		seen[checks[i].CounterKey()] = struct{}{}
	}
	require.Len(b, seen, len(checks), "subjects must map to distinct counter keys")
	return limiter, checks
}

func BenchmarkLimiterCheck(b *testing.B) {
	for _, o := range benchObservers {
		b.Run(o.name, func(b *testing.B) {
			limiter, checks := benchSetup(b, o.observer)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := limiter.Check(ctx, checks[i%len(checks)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func BenchmarkLimiterCheckAll(b *testing.B) {
	for _, o := range benchObservers {
		b.Run(o.name, func(b *testing.B) {
			limiter, checks := benchSetup(b, o.observer)
			ctx := context.Background()
			batch := make([]domain.Check, 2)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				batch[0], batch[1] = checks[i%len(checks)], checks[(i+1)%len(checks)]
				if _, err := limiter.CheckAll(ctx, batch); err != nil {
					b.Fatal(err)
				}
				i += 2
			}
		})
	}
}
