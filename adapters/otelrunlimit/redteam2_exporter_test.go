package otelrunlimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// exporterToken is the API key an exporter sends in its headers, as an
// OTLP exporter to a hosted backend does (otlpmetrichttp.WithHeaders).
const exporterToken = "Hx7-vendorKey-Q2m9Lp"

// tokenMetricExporter and tokenSpanExporter hold the token as the OTLP
// exporters hold their configured headers: in a field of the exporter.
type tokenMetricExporter struct{ headers map[string]string }

func (*tokenMetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (*tokenMetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (*tokenMetricExporter) Export(context.Context, *metricdata.ResourceMetrics) error { return nil }
func (*tokenMetricExporter) ForceFlush(context.Context) error                          { return nil }
func (*tokenMetricExporter) Shutdown(context.Context) error                            { return nil }

type tokenSpanExporter struct{ headers map[string]string }

func (*tokenSpanExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (*tokenSpanExporter) Shutdown(context.Context) error                             { return nil }

// TestNoValuePrintsTheExportersCredentials: a Telemetry, and the observer
// it gives a limiter's config, held the host's meter through plain
// pointers, and the meter reaches the provider's readers and their
// exporters. A spew dump (testify's failure messages) of a
// *Telemetry, of its Observer, or of an app.LimiterConfig or a
// wiring.Config holding either printed the exporter's headers, such as
// the API key of a hosted metrics backend. Only the host's own providers,
// in otelrunlimit.Config and runlimitfx.Params, may still print them.
func TestNoValuePrintsTheExportersCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	headers := map[string]string{"authorization": "Bearer " + exporterToken}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(&tokenMetricExporter{headers: headers})))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(&tokenSpanExporter{headers: headers}))
	t.Cleanup(func() { _ = mp.Shutdown(ctx); _ = tp.Shutdown(ctx) })

	hasher, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	p := domain.MustPolicy("auth.login", "identity", 1, time.Minute)
	check := domain.NewCheck(p, hasher.KeyString(p, "alice@example.test"))

	plain, err := otelrunlimit.NewObserver(mp)
	require.NoError(t, err)
	var cases []leakcheck.Case
	for name, cfg := range map[string]otelrunlimit.Config{
		"metrics":           {MeterProvider: mp},
		"spans":             {TracerProvider: tp},
		"metrics and spans": {MeterProvider: mp, TracerProvider: tp},
	} {
		tel, err := otelrunlimit.New(cfg)
		require.NoError(t, err)
		t.Cleanup(tel.Close)
		store, err := memory.New(memory.Config{MaxKeys: 10})
		require.NoError(t, err)
		stop, err := tel.WatchStore("memory", store.Stats)
		require.NoError(t, err)
		t.Cleanup(stop)
		limiterCfg := app.LimiterConfig{Observer: tel.Observer(), Name: "memory"}
		limiter, err := app.NewLimiter(store, limiterCfg)
		require.NoError(t, err)
		for range 2 { // allowed, then denied
			_, err = limiter.Check(ctx, check)
			require.NoError(t, err)
		}
		wiringCfg := wiring.Config{Memory: memory.Config{MaxKeys: 10}, Observer: tel.Observer(), CleanupObserver: tel}
		cases = append(cases,
			leakcheck.Value(name+": *otelrunlimit.Telemetry", tel),
			leakcheck.Value(name+": Telemetry.Observer", tel.Observer()),
			leakcheck.Value(name+": app.LimiterConfig", limiterCfg),
			leakcheck.Value(name+": wiring.Config", wiringCfg),
		)
	}
	cases = append(cases,
		leakcheck.Value("NewObserver", plain),
		leakcheck.Value("app.LimiterConfig of NewObserver", app.LimiterConfig{Observer: plain}),
	)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			c.Run(t, []byte(exporterToken))
		})
	}
}
