package wiring_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/testkit"
)

// panicSubject is what the host's panics carry: a subject, as a careless
// panic message would.
const panicSubject = "alice@example.test"

// panicValue is a panic value that spells the subject and the secret.
func panicValue() error { return fmt.Errorf("user %s with %s", panicSubject, testSecret) }

// panickyStore is a host store whose CleanupExpired and PoisonedShards
// panic once armed.
type panickyStore struct {
	*fakeStore
	armed atomic.Bool
}

func (s *panickyStore) CleanupExpired(ctx context.Context, max int) (int, error) {
	if s.armed.Load() {
		panic(panicValue())
	}
	return s.fakeStore.CleanupExpired(ctx, max)
}

func (s *panickyStore) PoisonedShards() []int {
	if s.armed.Load() {
		panic(panicValue())
	}
	return nil
}

// panickyObserver is a CleanupObserver that panics in StartCleanup or in
// EndCleanup.
type panickyObserver struct{ inStart bool }

func (o panickyObserver) StartCleanup(ctx context.Context, _ string) context.Context {
	if o.inStart {
		panic(panicValue())
	}
	return ctx
}

func (o panickyObserver) EndCleanup(context.Context, string, int, error) {
	if !o.inStart {
		panic(panicValue())
	}
}

// endRecorder is a CleanupObserver that sends each pass's error.
type endRecorder chan error

func (r endRecorder) StartCleanup(ctx context.Context, _ string) context.Context { return ctx }
func (r endRecorder) EndCleanup(_ context.Context, _ string, _ int, err error)   { r <- err }

// receive waits for a value on ch.
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(stuck):
		t.Fatalf("nothing received within %v", stuck)
		panic("unreachable")
	}
}

// TestCleanupLoopSurvivesEveryHostPanic: the store's CleanupExpired and
// PoisonedShards, CleanupErrorFunc and each cleanup observer panic on
// every pass. Each panic is logged at error level by its value's type
// only, the store's panic fails the pass (the telemetry counts it), the
// other observers still see the pass, and the loop goes on to the next.
func TestCleanupLoopSurvivesEveryHostPanic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs testkit.LogBuffer
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: mp})
	require.NoError(t, err)

	store := &panickyStore{fakeStore: newFakeStore(t)}
	ends := make(endRecorder, 4)
	failures := make(chan error, 4)
	ticks := make(chan time.Time)
	r, err := wiring.OpenWithTicks(ctx, wiring.Config{
		Store: store, KeySecret: wiring.NewSecret(testSecret), Logger: logs.Logger(),
		CleanupObserver: wiring.JoinCleanupObservers(
			panickyObserver{inStart: true}, tel, panickyObserver{}, ends),
		CleanupErrorFunc: func(err error) {
			failures <- err
			panic(panicValue())
		},
	}, ticks)
	require.NoError(t, err)
	store.armed.Store(true)

	for range 2 {
		tick(t, ticks)
		require.ErrorIs(t, receive(t, ends), wiring.ErrCleanupPanicked)
		err := receive(t, failures)
		var ce *wiring.CleanupError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "store", ce.Store)
		require.ErrorIs(t, err, wiring.ErrCleanupPanicked)
		require.Equal(t, "runlimit: cleanup of the store store: runlimit: cleanup panicked: CleanupExpired panicked with a value of type *errors.errorString", err.Error())
	}
	// The loop still takes ticks: it is alive between passes.
	tick(t, ticks)
	require.ErrorIs(t, receive(t, ends), wiring.ErrCleanupPanicked)
	receive(t, failures)
	require.NoError(t, r.Close(ctx))

	out := logs.String()
	for _, record := range []string{
		`level=ERROR msg="runlimit: store panicked; the loop goes on" store=store panic_type=*errors.errorString call=CleanupExpired`,
		`level=ERROR msg="runlimit: store panicked; the loop goes on" store=store panic_type=*errors.errorString call=PoisonedShards`,
		`level=ERROR msg="runlimit: CleanupErrorFunc panicked; the loop goes on" store=store panic_type=*errors.errorString`,
		`level=ERROR msg="runlimit: cleanup observer panicked; the loop goes on" store=store panic_type=*errors.errorString call=StartCleanup`,
		`level=ERROR msg="runlimit: cleanup observer panicked; the loop goes on" store=store panic_type=*errors.errorString call=EndCleanup`,
	} {
		require.Equal(t, 3, strings.Count(out, record), "once a pass: %s in\n%s", record, out)
	}
	require.NotContains(t, out, "cleanup failed", "the panic's record is the failure's")
	requireNoLeak(t, out, []byte(testSecret), []byte(panicSubject))

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range sum.DataPoints {
					counts[m.Name] += dp.Value
				}
			}
		}
	}
	require.Equal(t, int64(3), counts[otelrunlimit.MetricCleanupRuns])
	require.Equal(t, int64(3), counts[otelrunlimit.MetricCleanupFailures])
}

// TestCleanupLoopSurvivesAPanickingLogger: the host's log handler is host
// code on the loop's goroutine too; when it panics, even while a panic is
// being logged, the loop goes on.
func TestCleanupLoopSurvivesAPanickingLogger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &panickyStore{fakeStore: newFakeStore(t)}
	ends := make(endRecorder, 4)
	ticks := make(chan time.Time)
	// The handler is set after the start, which logs.
	handler := &switchHandler{}
	r, err := wiring.OpenWithTicks(ctx, wiring.Config{
		Store: store, KeySecret: wiring.NewSecret(testSecret), Logger: slog.New(handler),
		CleanupObserver: ends,
	}, ticks)
	require.NoError(t, err)
	handler.panics.Store(true)
	tick(t, ticks)
	require.NoError(t, receive(t, ends))
	store.armed.Store(true)
	tick(t, ticks)
	require.ErrorIs(t, receive(t, ends), wiring.ErrCleanupPanicked)
	tick(t, ticks)
	receive(t, ends)
	handler.panics.Store(false)
	require.NoError(t, r.Close(ctx))
}

// switchHandler discards records, or panics on each while panics is set.
type switchHandler struct{ panics atomic.Bool }

func (h *switchHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *switchHandler) Handle(context.Context, slog.Record) error {
	if h.panics.Load() {
		panic(errors.New("log sink down"))
	}
	return nil
}
func (h *switchHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *switchHandler) WithGroup(string) slog.Handler      { return h }
