package otelrunlimit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// The benchmarks measure what the telemetry costs an admission on a memory
// store, the cheapest there is, against the same limiter unobserved.
// Every check is allowed (the largest limit and window) and subjects cycle
// through 1,024 distinct keys. The SDK's meter provider aggregates every
// measurement as a service's would; the tracer provider samples every
// span (or none) and exports nothing, so the spans' own cost is measured,
// not an exporter's.

var benchPolicy = domain.MustPolicy("bench.otel", "subject", domain.MaxLimit, domain.MaxWindow)

// benchObservers builds each observer the benchmarks compare.
var benchObservers = []struct {
	name string
	cfg  func(b *testing.B) *otelrunlimit.Config // nil: no observer
}{
	{"observer=none", nil},
	{"observer=metrics", func(b *testing.B) *otelrunlimit.Config {
		return &otelrunlimit.Config{MeterProvider: benchMeter(b)}
	}},
	{"observer=metrics+unsampled-traces", func(b *testing.B) *otelrunlimit.Config {
		return &otelrunlimit.Config{MeterProvider: benchMeter(b), TracerProvider: benchTracer(b, sdktrace.NeverSample())}
	}},
	{"observer=metrics+traces", func(b *testing.B) *otelrunlimit.Config {
		return &otelrunlimit.Config{MeterProvider: benchMeter(b), TracerProvider: benchTracer(b, sdktrace.AlwaysSample())}
	}},
}

func benchMeter(b *testing.B) *sdkmetric.MeterProvider {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp
}

func benchTracer(b *testing.B, sampler sdktrace.Sampler) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

func benchSetup(b *testing.B, cfg *otelrunlimit.Config) (*app.Limiter, []domain.Check) {
	b.Helper()
	store, err := memory.New(memory.Config{MaxKeys: 1 << 16, Shards: 16})
	require.NoError(b, err)
	b.Cleanup(func() { _ = store.Close() })
	var observer app.Observer
	if cfg != nil {
		tel, err := otelrunlimit.New(*cfg)
		require.NoError(b, err)
		observer = tel.Observer()
		require.NotNil(b, observer)
	}
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

func BenchmarkObservedCheck(b *testing.B) {
	for _, o := range benchObservers {
		b.Run(o.name, func(b *testing.B) {
			var cfg *otelrunlimit.Config
			if o.cfg != nil {
				cfg = o.cfg(b)
			}
			limiter, checks := benchSetup(b, cfg)
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

func BenchmarkObservedCheckAll(b *testing.B) {
	for _, o := range benchObservers {
		b.Run(o.name, func(b *testing.B) {
			var cfg *otelrunlimit.Config
			if o.cfg != nil {
				cfg = o.cfg(b)
			}
			limiter, checks := benchSetup(b, cfg)
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
