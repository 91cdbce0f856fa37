package otelrunlimit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/ports"
)

// TestNilTelemetryRecordsNothing: a nil *Telemetry used to panic in every
// method; it records nothing, as a zero Telemetry and one without
// providers do.
func TestNilTelemetryRecordsNothing(t *testing.T) {
	t.Parallel()
	stats := func(context.Context) (ports.Stats, error) { return ports.Stats{}, nil }
	for name, tel := range map[string]*otelrunlimit.Telemetry{"nil": nil, "zero": new(otelrunlimit.Telemetry)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.NotPanics(t, func() {
				require.Nil(t, tel.Observer())
				ctx := tel.StartCleanup(context.Background(), "memory")
				require.NotNil(t, ctx)
				tel.EndCleanup(ctx, "memory", 3, errors.New("down"))
				stop, err := tel.WatchStore("memory", stats)
				require.NoError(t, err)
				stop()
			})
		})
	}
}

// TestNilArguments: a nil stats function is refused at WatchStore rather
// than panicking in the exporter's collection later, and nil contexts in
// the cleanup hooks stand for context.Background.
func TestNilArguments(t *testing.T) {
	t.Parallel()
	f := setup(t, true)
	var nilCtx context.Context

	stop, err := f.tel.WatchStore("memory", nil)
	require.ErrorIs(t, err, app.ErrInvalidConfig)
	require.Nil(t, stop)
	require.NotPanics(t, func() { f.collect(t) })

	require.NotPanics(t, func() {
		ctx := f.tel.StartCleanup(nilCtx, "memory")
		require.NotNil(t, ctx)
		f.tel.EndCleanup(ctx, "memory", 1, nil)
		f.tel.EndCleanup(nilCtx, "memory", 1, nil)
	})
	require.Len(t, f.spans.Ended(), 1, "the span StartCleanup began has ended")
}

// TestNilPointerProviders: a nil *sdkmetric.MeterProvider or
// *sdktrace.TracerProvider in the Config's interfaces used to panic in
// New; it counts as no provider, as nil does: the global providers if set
// (another test of this package sets them), and otherwise none.
func TestNilPointerProviders(t *testing.T) {
	t.Parallel()
	var mp *sdkmetric.MeterProvider
	var tp *sdktrace.TracerProvider
	var tel *otelrunlimit.Telemetry
	var err error
	require.NotPanics(t, func() {
		tel, err = otelrunlimit.New(otelrunlimit.Config{MeterProvider: mp, TracerProvider: tp})
	})
	require.NoError(t, err)
	unset, err := otelrunlimit.New(otelrunlimit.Config{})
	require.NoError(t, err)
	require.Equal(t, unset.Observer() == nil, tel.Observer() == nil, "a nil pointer provider is no provider")
	var obs app.Observer
	require.NotPanics(t, func() { obs, err = otelrunlimit.NewObserver(mp) })
	require.NoError(t, err)
	unsetObs, err := otelrunlimit.NewObserver(nil)
	require.NoError(t, err)
	require.Equal(t, unsetObs == nil, obs == nil)
}

// TestZeroValuesPrint: nil and zero values of the package's types print
// under every printer without panicking.
func TestZeroValuesPrint(t *testing.T) {
	t.Parallel()
	leakcheck.CheckPrintable(t, "nil *Telemetry", (*otelrunlimit.Telemetry)(nil))
	leakcheck.CheckPrintable(t, "zero Telemetry", &otelrunlimit.Telemetry{})
	leakcheck.CheckPrintable(t, "zero Config", otelrunlimit.Config{})
}
