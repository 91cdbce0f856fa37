package runlimitfx_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// telemetry is a meter and a tracer provider that keep what they record,
// supplied to an fx graph as the interfaces the module takes.
type telemetry struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	supply fx.Option
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	tel := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	tel.supply = fx.Supply(
		fx.Annotate(mp, fx.As(new(metric.MeterProvider))),
		fx.Annotate(tp, fx.As(new(trace.TracerProvider))),
	)
	return tel
}

// collect returns every data point as "metric{attributes} value", the
// histogram's as its count, sorted.
func (tel *telemetry) collect(t *testing.T) []string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(context.Background(), &rm))
	var out []string
	point := func(name string, set attribute.Set, v any) {
		var kv []string
		for _, a := range set.ToSlice() {
			kv = append(kv, string(a.Key)+"="+a.Value.String())
		}
		out = append(out, fmt.Sprintf("%s{%s} %v", name, strings.Join(kv, ","), v))
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					point(m.Name, dp.Attributes, dp.Value)
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					point(m.Name, dp.Attributes, dp.Value)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					point(m.Name, dp.Attributes, dp.Count)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestModuleExportsTelemetryToTheGraphsProviders: with a meter and a
// tracer provider in the graph, the module's limiters report admissions
// by policy and outcome, their latency and spans, and the store's
// headroom while the application runs.
func TestModuleExportsTelemetryToTheGraphsProviders(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	var limiter *app.Limiter
	var hasher domain.KeyHasher
	fxApp := fxtest.New(t, runlimitfx.Module, fx.Supply(memoryConfig(t)), tel.supply,
		fx.Populate(&limiter, &hasher)).RequireStart()

	p := loginPolicy(t, "auth.login") // 2 a minute
	for _, want := range []bool{true, true, false} {
		require.Equal(t, want, check(t, limiter, hasher, p, "alice@example.test").PermitsRequest())
	}
	require.Equal(t, []string{
		"runlimit.admission.duration{runlimit.limiter=memory,runlimit.outcome=allowed} 2",
		"runlimit.admission.duration{runlimit.limiter=memory,runlimit.outcome=quota_denied} 1",
		"runlimit.admissions{runlimit.limiter=memory,runlimit.outcome=allowed,runlimit.policy.id=auth.login,runlimit.policy.scope=identity} 2",
		"runlimit.admissions{runlimit.limiter=memory,runlimit.outcome=quota_denied,runlimit.policy.id=auth.login,runlimit.policy.scope=identity} 1",
		// 100 counters in 4 shards of 25; one is taken.
		"runlimit.store.fullest_partition.headroom{runlimit.store=memory} 24",
		"runlimit.store.headroom{runlimit.store=memory} 99",
	}, tel.collect(t))
	require.Len(t, tel.spans.Ended(), 3)
	for _, s := range tel.spans.Ended() {
		require.Equal(t, otelrunlimit.SpanCheck, s.Name())
	}

	fxApp.RequireStop()
	for _, line := range tel.collect(t) {
		require.NotContains(t, line, "headroom", "a stopped application's stores are no longer read")
	}
}

// TestModuleExportsThePostgresLedgersHeadroom: on PostgreSQL, the headroom
// gauges read the capacity ledger: 256 shards of 4,096 rows.
func TestModuleExportsThePostgresLedgersHeadroom(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	tel := newTelemetry(t)
	var limiter *app.Limiter
	var hasher domain.KeyHasher
	fxApp := fxtest.New(t, runlimitfx.Module, tel.supply,
		fx.Supply(wiring.Config{Backend: wiring.BackendPostgres, Pool: wiring.BorrowPool(db.Pool), KeySecret: wiring.NewSecret(testSecret)}),
		fx.Populate(&limiter, &hasher)).RequireStart()
	defer fxApp.RequireStop()
	require.True(t, check(t, limiter, hasher, loginPolicy(t, "auth.login"), "alice@example.test").PermitsRequest())
	lines := tel.collect(t)
	require.Contains(t, lines, "runlimit.store.headroom{runlimit.store=postgres} 1048575")
	require.Contains(t, lines, "runlimit.store.fullest_partition.headroom{runlimit.store=postgres} 4095")
	require.Contains(t, lines,
		"runlimit.admissions{runlimit.limiter=postgres,runlimit.outcome=allowed,runlimit.policy.id=auth.login,runlimit.policy.scope=identity} 1")
}

// TestModuleWithoutProvidersObservesNothing: with no provider in the graph
// and none set globally, the module adds no observer: a host observer
// sees events as before, and nothing is recorded anywhere.
func TestModuleWithoutProvidersObservesNothing(t *testing.T) {
	t.Parallel()
	var events []app.Event
	var limiter *app.Limiter
	var hasher domain.KeyHasher
	cfg := memoryConfig(t)
	cfg.Observer = app.ObserverFunc(func(e app.Event) { events = append(events, e) })
	fxApp := fxtest.New(t, runlimitfx.Module, fx.Supply(cfg), fx.Populate(&limiter, &hasher)).RequireStart()
	defer fxApp.RequireStop()
	require.True(t, check(t, limiter, hasher, loginPolicy(t, "auth.login"), "alice").PermitsRequest())
	require.Len(t, events, 1)
}

// TestModuleStopsWatchingBorrowedStores: a borrowed host store stays open
// after the application stops, and its headroom is no longer read.
func TestModuleStopsWatchingBorrowedStores(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	store := newHostStore(t)
	fxApp := fxtest.New(t, runlimitfx.Module, tel.supply,
		fx.Supply(wiring.Config{Store: store, KeySecret: wiring.NewSecret(testSecret)}),
		fx.Invoke(func(*wiring.Runtime) {})).RequireStart()
	require.Contains(t, tel.collect(t), "runlimit.store.headroom{runlimit.store=store} 100")
	fxApp.RequireStop()
	_, err := store.Stats(context.Background())
	require.NoError(t, err, "the borrowed store still answers")
	require.Empty(t, tel.collect(t), "but it is no longer read")
}
