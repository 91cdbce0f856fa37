package otelrunlimit_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// liveCallbacks is a meter provider that counts the callbacks registered
// with it and not yet unregistered, and refuses them all when refuse is
// set.
type liveCallbacks struct {
	metric.MeterProvider
	live   atomic.Int64
	refuse bool
}

func (p *liveCallbacks) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return liveMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

type liveMeter struct {
	metric.Meter
	p *liveCallbacks
}

func (m liveMeter) RegisterCallback(f metric.Callback, instruments ...metric.Observable) (metric.Registration, error) {
	if m.p.refuse {
		return nil, errors.New("callbacks refused")
	}
	reg, err := m.Meter.RegisterCallback(f, instruments...)
	if err != nil {
		return nil, err
	}
	m.p.live.Add(1)
	return &liveRegistration{Registration: reg, p: m.p}, nil
}

type liveRegistration struct {
	metric.Registration
	p    *liveCallbacks
	done atomic.Bool
}

func (r *liveRegistration) Unregister() error {
	if r.done.CompareAndSwap(false, true) {
		r.p.live.Add(-1)
	}
	return r.Registration.Unregister()
}

// TestCallbackRegisteredWithTheFirstAdmission: New left runlimit.admissions'
// callback registered with the provider, so a Telemetry built for an
// application that never started (and so never closed it) stayed with a
// provider that outlives the application. The callback is now registered
// with the first admission counted, counts as before, and goes with Close;
// a Telemetry closed before any admission registers nothing. A provider
// that refuses the callback is still reported by New.
func TestCallbackRegisteredWithTheFirstAdmission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = sdk.Shutdown(ctx) })
	mp := &liveCallbacks{MeterProvider: sdk}
	hasher, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	p := domain.MustPolicy("auth.login", "identity", 5, time.Minute)
	admit := func(tel *otelrunlimit.Telemetry) {
		store, err := memory.New(memory.Config{MaxKeys: 10})
		require.NoError(t, err)
		limiter, err := app.NewLimiter(store, app.LimiterConfig{Name: "edge", Observer: tel.Observer()})
		require.NoError(t, err)
		_, err = limiter.Check(ctx, domain.NewCheck(p, hasher.KeyString(p, "alice")))
		require.NoError(t, err)
	}

	tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: mp})
	require.NoError(t, err)
	require.Zero(t, mp.live.Load(), "New leaves no callback with the provider")
	admit(tel)
	require.Equal(t, int64(1), mp.live.Load())
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	require.Equal(t, int64(1), admissionsOf(rm), "the first admission is counted")
	tel.Close()
	require.Zero(t, mp.live.Load())

	closedFirst, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: mp})
	require.NoError(t, err)
	closedFirst.Close()
	admit(closedFirst)
	require.Zero(t, mp.live.Load(), "a closed Telemetry registers nothing")

	mp.refuse = true
	_, err = otelrunlimit.New(otelrunlimit.Config{MeterProvider: mp})
	require.ErrorContains(t, err, "callbacks refused")
}

// admissionsOf sums runlimit.admissions in rm.
func admissionsOf(rm metricdata.ResourceMetrics) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == otelrunlimit.MetricAdmissions {
				for _, dp := range sum.DataPoints {
					n += dp.Value
				}
			}
		}
	}
	return n
}
