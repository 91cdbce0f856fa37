package otelrunlimit_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/goleak"

	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/ports"
)

// registerHookProvider is a meter provider whose meters call hook, once
// armed, with each callback registered and before the registration is
// returned: what a collection and a Close running between the two do.
type registerHookProvider struct {
	metric.MeterProvider
	armed atomic.Bool
	hook  func(metric.Callback)
}

func (p *registerHookProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &registerHookMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

type registerHookMeter struct {
	metric.Meter
	p *registerHookProvider
}

func (m *registerHookMeter) RegisterCallback(f metric.Callback, instruments ...metric.Observable) (metric.Registration, error) {
	reg, err := m.Meter.RegisterCallback(f, instruments...)
	if err == nil && m.p.armed.CompareAndSwap(true, false) {
		m.p.hook(f)
	}
	return reg, err
}

// TestAWatchClosedAsItRegistersLeavesNoReading: a collection can run a
// store's callback as soon as WatchStore has registered it, and Close
// can run before WatchStore has recorded the watch. WatchStore then
// unregistered the callback but left the reading that collection
// started, and its goroutine, running: unstopped, for as long as the
// store's Stats took, after WatchStore and Close had both returned. It
// now ends that reading, as Close does for the watches it finds, before
// it returns.
//
// It does not run in parallel: goleak compares against the goroutines of
// the moment.
func TestAWatchClosedAsItRegistersLeavesNoReading(t *testing.T) {
	f := setup(t, false)
	p := &registerHookProvider{MeterProvider: f.mp}
	tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: p})
	require.NoError(t, err)
	store := newStuckStats()
	t.Cleanup(func() { close(store.release) })
	returned := make(chan error, 1)
	stats := func(ctx context.Context) (ports.Stats, error) {
		st, err := store.Stats(ctx)
		returned <- err
		return st, err
	}
	p.hook = func(f metric.Callback) {
		// A collection whose context ends while the reading it started
		// goes on, then Close.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, f(ctx, nil))
		<-store.entered
		tel.Close()
	}
	before := goleak.IgnoreCurrent()
	p.armed.Store(true)
	stop, err := tel.WatchStore("postgres", stats)
	require.NoError(t, err)
	require.False(t, p.armed.Load(), "the callback was registered")
	select {
	case err := <-returned:
		require.ErrorIs(t, err, context.Canceled)
	default:
		t.Fatal("WatchStore returned while the reading a collection started still ran")
	}
	stop()
	goleak.VerifyNone(t, before)
}
