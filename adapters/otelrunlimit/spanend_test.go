package otelrunlimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
)

// panickyMeters is a host's meter provider whose synchronous instruments
// panic as they record (a vendor's SDK with a bug, say).
type panickyMeters struct{ metric.MeterProvider }

func (p panickyMeters) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return panickyMeter{p.MeterProvider.Meter(name, opts...)}
}

type panickyMeter struct{ metric.Meter }

func (m panickyMeter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	h, err := m.Meter.Float64Histogram(name, opts...)
	return panickyHistogram{h}, err
}

func (m panickyMeter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	c, err := m.Meter.Int64Counter(name, opts...)
	return panickyCounter{c}, err
}

type panickyHistogram struct{ metric.Float64Histogram }

func (panickyHistogram) Record(context.Context, float64, ...metric.RecordOption) { panic("histogram") }

type panickyCounter struct{ metric.Int64Counter }

func (panickyCounter) Add(context.Context, int64, ...metric.AddOption) { panic("counter") }

// panickyTracers is a host's tracer provider whose spans panic as their
// attributes are set.
type panickyTracers struct{ trace.TracerProvider }

func (p panickyTracers) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return panickyTracer{p.TracerProvider.Tracer(name, opts...)}
}

type panickyTracer struct{ trace.Tracer }

func (t panickyTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, span := t.Tracer.Start(ctx, name, opts...)
	return ctx, panickySpan{span}
}

type panickySpan struct{ trace.Span }

func (panickySpan) SetAttributes(...attribute.KeyValue) { panic("attributes") }

// TestSpansEndWhenTheHostsProvidersPanic: a span the telemetry started is
// ended whatever panics between its start and its end (the host's meter
// provider as the admission or the cleanup pass is counted, the host's
// span as its attributes are set), so that no span stays open in the
// host's processors. The limiter and the cleanup loop recover the panic.
func TestSpansEndWhenTheHostsProvidersPanic(t *testing.T) {
	t.Parallel()
	p := domain.MustPolicy("auth.login", "identity", 5, time.Minute)
	for name, build := range map[string]func(f *fixture, tp *sdktrace.TracerProvider) otelrunlimit.Config{
		"meter panics as the admission is counted": func(f *fixture, tp *sdktrace.TracerProvider) otelrunlimit.Config {
			return otelrunlimit.Config{MeterProvider: panickyMeters{f.mp}, TracerProvider: tp}
		},
		"span panics as the admission starts": func(_ *fixture, tp *sdktrace.TracerProvider) otelrunlimit.Config {
			return otelrunlimit.Config{TracerProvider: panickyTracers{tp}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, false)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			tel, err := otelrunlimit.New(build(f, tp))
			require.NoError(t, err)
			store, err := memory.New(memory.Config{MaxKeys: 10})
			require.NoError(t, err)
			var logs testkit.LogBuffer
			limiter, err := app.NewLimiter(store, app.LimiterConfig{Name: "edge", Observer: tel.Observer(), Logger: logs.Logger()})
			require.NoError(t, err)
			d, err := limiter.Check(context.Background(), domain.NewCheck(p, f.hasher.KeyString(p, "alice")))
			require.NoError(t, err)
			require.True(t, d.PermitsRequest())
			require.Contains(t, logs.String(), "observer panicked", "the panic happened")
			require.Len(t, f.spans.Started(), 1)
			require.Len(t, f.spans.Ended(), 1, "the admission's span is ended")
			require.Equal(t, otelrunlimit.SpanCheck, f.spans.Ended()[0].Name())
		})
	}
	t.Run("meter panics as the cleanup pass is counted", func(t *testing.T) {
		t.Parallel()
		f := setup(t, false)
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: panickyMeters{sdkmetric.NewMeterProvider()}, TracerProvider: tp})
		require.NoError(t, err)
		ctx := tel.StartCleanup(context.Background(), "memory")
		require.Panics(t, func() { tel.EndCleanup(ctx, "memory", 3, nil) })
		require.Len(t, f.spans.Started(), 1)
		require.Len(t, f.spans.Ended(), 1, "the pass's span is ended")
		require.Equal(t, otelrunlimit.SpanCleanup, f.spans.Ended()[0].Name())
	})
}
