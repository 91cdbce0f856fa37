package otelrunlimit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// TestCloseUnregistersTheCallbacks: a Telemetry closed on a provider that
// outlives it (a host's application restarted in its tests, on the global
// provider) leaves nothing of itself in the collections, its admission
// counts' callback and its watched stores' included, so the provider
// holds no Telemetry it ever built. Closing twice is harmless, and a
// store watched after Close is not reported.
func TestCloseUnregistersTheCallbacks(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	store, limiter := f.edgeLimiter(t, 10)
	p := domain.MustPolicy("auth.login", "identity", 5, time.Minute)
	_, err := limiter.Check(context.Background(), domain.NewCheck(p, f.hasher.KeyString(p, "alice")))
	require.NoError(t, err)
	_, err = f.tel.WatchStore("edge", store.Stats)
	require.NoError(t, err)
	s := f.collect(t)
	require.Equal(t, int64(1), s.sums[otelrunlimit.MetricAdmissions][checkAttrs("edge", "auth.login", "identity", "allowed")])
	require.Equal(t, int64(9), s.gauges[otelrunlimit.MetricHeadroom]["runlimit.store=edge"])

	f.tel.Close()
	f.tel.Close()
	stop, err := f.tel.WatchStore("late", store.Stats)
	require.NoError(t, err)
	stop()
	f.clock.Advance(time.Hour)
	s = f.collect(t)
	require.Empty(t, s.sums[otelrunlimit.MetricAdmissions], "a closed Telemetry's counts are no longer collected")
	require.Empty(t, s.gauges[otelrunlimit.MetricHeadroom], "nor its stores' headroom")
	require.Empty(t, s.gauges[otelrunlimit.MetricFullestHeadroom])

	var nilTel *otelrunlimit.Telemetry
	nilTel.Close()
}

// TestCloseRacesCollectionsAndWatches: Close, stores watched and
// unwatched, and collections run at once without a data race, and
// nothing is collected once all are done.
func TestCloseRacesCollectionsAndWatches(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	stats := func(context.Context) (ports.Stats, error) {
		return ports.Stats{Capacity: 4, Shards: 2, Headroom: []int64{1, 2}}, nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stop, err := f.tel.WatchStore("store", stats)
			if err != nil {
				errs <- err
				return
			}
			if i%2 == 0 {
				stop()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.tel.Close()
	}()
	for range 4 {
		f.collect(t)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	f.clock.Advance(time.Hour)
	require.Empty(t, f.collect(t).gauges[otelrunlimit.MetricHeadroom])
}

// TestNothingIsRecordedAfterClose: a limiter used after its Telemetry is
// closed (a host's application stopped while a request drains) records
// nothing more, in any instrument: its latency and errors, like its
// counts, would otherwise go on into the instruments a host's next
// Telemetry on the same provider shares by name. Nor does a cleanup pass
// that ends after Close count.
func TestNothingIsRecordedAfterClose(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	store, limiter := f.edgeLimiter(t, 10)
	p := domain.MustPolicy("auth.login", "identity", 5, time.Minute)
	check := domain.NewCheck(p, f.hasher.KeyString(p, "alice"))
	ctx := context.Background()
	_, err := limiter.Check(ctx, check)
	require.NoError(t, err)
	before := f.collect(t)
	require.Equal(t, map[string]uint64{admissionAttrs("edge", "allowed"): 1}, before.histograms[otelrunlimit.MetricAdmissionLatency])

	f.tel.Close()
	_, err = limiter.Check(ctx, check)
	require.NoError(t, err)
	require.NoError(t, store.Close())
	_, err = limiter.Check(ctx, check)
	require.ErrorIs(t, err, ports.ErrClosed)
	passCtx := f.tel.StartCleanup(ctx, "memory")
	n, err := store.CleanupExpired(passCtx, 10)
	f.tel.EndCleanup(passCtx, "memory", n+3, err)

	after := f.collect(t)
	require.Equal(t, before.histograms, after.histograms, "no latency after Close")
	require.Empty(t, after.sums, "no count, error or cleanup pass after Close")
}
