package otelrunlimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// TestGlobalProvidersOnceSet cannot run in parallel: it sets the global
// providers, which no other test of this package relies on. Before they
// are set, or with no-op providers, Telemetry records nothing and gives
// no observer, so a limiter runs unobserved; once they are set, a config
// without providers records to them.
func TestGlobalProvidersOnceSet(t *testing.T) {
	tel, err := otelrunlimit.New(otelrunlimit.Config{})
	require.NoError(t, err)
	require.Nil(t, tel.Observer(), "the unset global providers record nothing")
	observer, err := otelrunlimit.NewObserver(nil)
	require.NoError(t, err)
	require.Nil(t, observer)
	stop, err := tel.WatchStore("memory", func(context.Context) (ports.Stats, error) {
		t.Error("a store is read for no meter")
		return ports.Stats{}, nil
	})
	require.NoError(t, err)
	stop()

	tel, err = otelrunlimit.New(otelrunlimit.Config{
		MeterProvider: metricnoop.NewMeterProvider(), TracerProvider: tracenoop.NewTracerProvider(),
	})
	require.NoError(t, err)
	require.Nil(t, tel.Observer(), "no-op providers record nothing")

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	otel.SetMeterProvider(mp)
	otel.SetTracerProvider(tp)
	// The globals cannot be unset: leave no-op ones, which record nothing
	// as the unset ones do, so that the test holds when run again
	// (-count) instead of finding the SDK providers it shut down.
	t.Cleanup(func() {
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
	})

	tel, err = otelrunlimit.New(otelrunlimit.Config{})
	require.NoError(t, err)
	require.Implements(t, (*app.ContextObserver)(nil), tel.Observer(), "traced, with the global tracer")
	store, err := memory.New(memory.Config{MaxKeys: 10})
	require.NoError(t, err)
	limiter, err := app.NewLimiter(store, app.LimiterConfig{Name: "edge", Observer: tel.Observer()})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	p := domain.MustPolicy("auth.login", "identity", 1, time.Minute)
	_, err = limiter.Check(context.Background(), domain.NewCheck(p, hasher.KeyString(p, "alice")))
	require.NoError(t, err)
	require.Len(t, spans.Ended(), 1)
	f := &fixture{reader: reader}
	require.Equal(t, map[string]int64{checkAttrs("edge", "auth.login", "identity", "allowed"): 1},
		f.collect(t).sums[otelrunlimit.MetricAdmissions])
}
