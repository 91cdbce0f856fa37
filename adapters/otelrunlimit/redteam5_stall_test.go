package otelrunlimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/ports"
)

// failSafe bounds how long a test waits for what must happen; reaching
// it fails the test, it is not a measure of speed.
const failSafe = 30 * time.Second

// stuckStats is a store's Stats held up by its database (a locked table,
// a stalled connection): it answers when released, or when its context
// ends, as the PostgreSQL store's does.
type stuckStats struct {
	entered chan struct{}
	release chan struct{}
}

func newStuckStats() *stuckStats {
	return &stuckStats{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (s *stuckStats) Stats(ctx context.Context) (ports.Stats, error) {
	s.entered <- struct{}{}
	select {
	case <-s.release:
		return ports.Stats{Capacity: 4, Shards: 1, Headroom: []int64{4}}, nil
	case <-ctx.Done():
		return ports.Stats{}, ctx.Err()
	}
}

// collectAsync collects r on a goroutine of its own with ctx.
func collectAsync(ctx context.Context, r *sdkmetric.ManualReader) <-chan error {
	done := make(chan error, 1)
	go func() {
		var rm metricdata.ResourceMetrics
		done <- r.Collect(ctx, &rm)
	}()
	return done
}

// TestStopAndCloseDoNotWaitForAStuckStats: a collection waiting in a
// store's Stats holds the SDK's pipeline, whose Unregister waits for it.
// A watch's stop, and the Telemetry's Close, end that reading first, so
// that neither waits for the store (a host's OnStop would otherwise
// wait for the store's whole budget, past its own deadline).
func TestStopAndCloseDoNotWaitForAStuckStats(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"stop", "Close"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			f := setup(t, false)
			store := newStuckStats()
			stop, err := f.tel.WatchStore("postgres", store.Stats)
			require.NoError(t, err)
			collected := collectAsync(context.Background(), f.reader)
			testkit.Receive(t, store.entered, failSafe, "the collection's reading")

			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				if how == "stop" {
					stop()
				} else {
					f.tel.Close()
				}
			}()
			select {
			case <-stopped:
			case <-time.After(failSafe):
				close(store.release)
				t.Fatalf("%s waited for a store's Stats held up by its database", how)
			}
			require.NoError(t, testkit.Receive(t, collected, failSafe, "the collection's end"))
			require.Empty(t, f.collect(t).gauges[otelrunlimit.MetricHeadroom], "a store no longer watched is not reported")
		})
	}
}

// TestACollectionGivesUpWaitingForAnotherReading: with two readers (a
// Prometheus endpoint and an OTLP exporter, say) the callbacks of their
// collections run at once. One whose context ends while the other's
// reading of the store is held up returns, reporting no headroom for
// that store, rather than waiting for the store's budget.
func TestACollectionGivesUpWaitingForAnotherReading(t *testing.T) {
	t.Parallel()
	first, second := sdkmetric.NewManualReader(), sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(first), sdkmetric.WithReader(second))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	// The host's deadline passes while the second collection runs its
	// callbacks: a callback of the host's, registered before the watch's,
	// ends it on the second collection (the SDK refuses a collection
	// whose context has ended before it starts).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var probes atomic.Int32
	probe, err := mp.Meter("probe").Int64ObservableGauge("probe")
	require.NoError(t, err)
	_, err = mp.Meter("probe").RegisterCallback(func(context.Context, metric.Observer) error {
		if probes.Add(1) == 2 {
			cancel()
		}
		return nil
	}, probe)
	require.NoError(t, err)
	tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: mp})
	require.NoError(t, err)
	t.Cleanup(tel.Close)
	store := newStuckStats()
	stop, err := tel.WatchStore("postgres", store.Stats)
	require.NoError(t, err)
	t.Cleanup(stop)

	firstDone := collectAsync(context.Background(), first)
	testkit.Receive(t, store.entered, failSafe, "the first collection's reading")

	var rm metricdata.ResourceMetrics
	secondDone := make(chan error, 1)
	go func() { secondDone <- second.Collect(ctx, &rm) }()
	select {
	case err := <-secondDone:
		require.NoError(t, err)
		require.Equal(t, int32(2), probes.Load())
	case <-time.After(failSafe):
		close(store.release)
		t.Fatal("a collection whose context ended waited for another's reading")
	}
	close(store.release)
	require.NoError(t, testkit.Receive(t, firstDone, failSafe, "the first collection's end"))
}

// TestAScrapeDoesNotWaitForAStuckStatsPastStatsTimeout: a scrape (a
// collection whose context has no deadline, as a Prometheus handler's)
// waits for a store whose Stats is held up by its database (another
// role holding the capacity ledger locked) no longer than StatsTimeout,
// and reports no headroom for it; a scrape that arrives while that
// reading is still in flight does not start another, nor wait for it
// past its own StatsTimeout. Once the store answers, the reading taken
// in the background is reported.
func TestAScrapeDoesNotWaitForAStuckStatsPastStatsTimeout(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: mp, StatsTimeout: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(tel.Close)
	store := newStuckStats()
	stop, err := tel.WatchStore("postgres", store.Stats)
	require.NoError(t, err)
	t.Cleanup(stop)

	headroom := func(rm *metricdata.ResourceMetrics) []int64 {
		var out []int64
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == otelrunlimit.MetricHeadroom {
					for _, dp := range g.DataPoints {
						out = append(out, dp.Value)
					}
				}
			}
		}
		return out
	}
	scrape := func() []int64 {
		done := make(chan *metricdata.ResourceMetrics, 1)
		go func() {
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				done <- nil
				return
			}
			done <- &rm
		}()
		rm := testkit.Receive(t, done, failSafe, "a scrape while the store's Stats is held up")
		require.NotNil(t, rm, "the scrape failed")
		return headroom(rm)
	}
	require.Empty(t, scrape(), "a store that has not answered reports no headroom")
	testkit.Receive(t, store.entered, failSafe, "the reading")
	require.Empty(t, scrape(), "a store that has not answered reports no headroom")
	require.Empty(t, store.entered, "a second reading started while one was in flight")

	close(store.release)
	require.Eventually(t, func() bool { return len(scrape()) == 1 }, failSafe, time.Millisecond,
		"the reading that went on in the background is reported once it is in")
	require.Equal(t, []int64{4}, scrape())
	require.Empty(t, store.entered, "the store was read again within the interval")
}

// TestAReadingHeldUpForGoodDelaysOneScrapeOnly: a store whose Stats never
// answers (a host's that ignores its context, or a connection stalled
// past its budget) keeps scrapes waiting StatsTimeout from the reading's
// start, in all: once that has passed, a scrape reports no headroom for
// it at once, rather than holding every scrape, and the other
// instruments with it, for StatsTimeout again.
func TestAReadingHeldUpForGoodDelaysOneScrapeOnly(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: f.mp, StatsTimeout: time.Hour})
	require.NoError(t, err)
	t.Cleanup(tel.Close)
	otelrunlimit.SetNow(tel, f.clock.Now)
	store := newStuckStats()
	t.Cleanup(func() { close(store.release) })
	stop, err := tel.WatchStore("postgres", store.Stats)
	require.NoError(t, err)
	t.Cleanup(stop)

	// The first scrape waits for the reading until its own context ends
	// (its StatsTimeout would take an hour).
	ctx, cancel := context.WithCancel(context.Background())
	first := collectAsync(ctx, f.reader)
	testkit.Receive(t, store.entered, failSafe, "the first scrape's reading")
	cancel()
	testkit.Receive(t, first, failSafe, "the first scrape's end")

	// An hour on, the reading is still held up.
	f.clock.Advance(time.Hour)
	second := collectAsync(context.Background(), f.reader)
	select {
	case err := <-second:
		require.NoError(t, err)
	case <-time.After(failSafe):
		t.Fatal("a scrape waited again for a reading held up past StatsTimeout")
	}
	require.Empty(t, f.collect(t).gauges[otelrunlimit.MetricHeadroom], "a store that has not answered reports no headroom")
	require.Empty(t, store.entered, "no second reading started while one was in flight")
}
