package otelrunlimit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
)

// spanStore is a memory store that records the span of the context each
// admission reaches it with, as a database client's span would find it.
type spanStore struct {
	*memory.Store
	mu   sync.Mutex
	seen []trace.SpanContext
}

func (s *spanStore) record(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, trace.SpanContextFromContext(ctx))
}

func (s *spanStore) Admit(ctx context.Context, b *domain.Batch) error {
	s.record(ctx)
	return s.Store.Admit(ctx, b)
}

func (s *spanStore) AdmitCheck(ctx context.Context, c domain.Check) (domain.Decision, error) {
	s.record(ctx)
	return s.Store.AdmitCheck(ctx, c)
}

// attrs returns a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// TestAdmissionSpansNestBetweenTheRequestAndTheStore: each admission is a
// span named for Check or CheckAll, a child of the caller's span, and the
// store runs in it; its attributes say the limiter, the policies, the
// outcome and the deciding check, or the error.
func TestAdmissionSpansNestBetweenTheRequestAndTheStore(t *testing.T) {
	t.Parallel()
	f := setup(t, true)
	inner, err := memory.New(memory.Config{MaxKeys: 100})
	require.NoError(t, err)
	store := &spanStore{Store: inner}
	limiter, err := app.NewLimiter(store, app.LimiterConfig{Name: "edge", Observer: f.tel.Observer()})
	require.NoError(t, err)
	client := domain.MustPolicy("auth.login", "client", 5, time.Minute)
	identity := domain.MustPolicy("auth.login", "identity", 1, time.Minute)
	alice := domain.NewCheck(identity, f.hasher.KeyString(identity, "alice@example.test"))
	ip := domain.NewCheck(client, f.hasher.KeyString(client, "198.51.100.7"))

	host := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans)).Tracer("host")
	ctx, request := host.Start(context.Background(), "request")
	_, err = limiter.Check(ctx, alice)
	require.NoError(t, err)
	_, err = limiter.CheckAll(ctx, []domain.Check{ip, alice})
	require.NoError(t, err)
	require.NoError(t, inner.Close())
	_, err = limiter.Check(ctx, alice)
	require.ErrorIs(t, err, memory.ErrClosed)
	request.End()

	ended := f.spans.Ended()
	require.Len(t, ended, 4)
	check, batch, failed := ended[0], ended[1], ended[2]
	require.Equal(t, "request", ended[3].Name())
	require.Equal(t, []string{otelrunlimit.SpanCheck, otelrunlimit.SpanCheckAll, otelrunlimit.SpanCheck},
		[]string{check.Name(), batch.Name(), failed.Name()})
	for i, s := range ended[:3] {
		require.Equal(t, request.SpanContext().SpanID(), s.Parent().SpanID(), "span %d nests under the request", i)
		require.Equal(t, request.SpanContext().TraceID(), s.SpanContext().TraceID())
		require.Equal(t, trace.SpanKindInternal, s.SpanKind())
		require.Equal(t, s.SpanContext(), store.seen[i], "the store runs in span %d", i)
		require.Equal(t, otelrunlimit.ScopeName, s.InstrumentationScope().Name)
	}

	require.Equal(t, map[attribute.Key]attribute.Value{
		otelrunlimit.AttrLimiter:   attribute.StringValue("edge"),
		otelrunlimit.AttrBatchSize: attribute.IntValue(1),
		otelrunlimit.AttrPolicies:  attribute.StringSliceValue([]string{"auth.login/identity"}),
		otelrunlimit.AttrOutcome:   attribute.StringValue("allowed"),
	}, attrs(check))
	require.Equal(t, codes.Unset, check.Status().Code)
	require.Equal(t, map[attribute.Key]attribute.Value{
		otelrunlimit.AttrLimiter:      attribute.StringValue("edge"),
		otelrunlimit.AttrBatchSize:    attribute.IntValue(2),
		otelrunlimit.AttrPolicies:     attribute.StringSliceValue([]string{"auth.login/client", "auth.login/identity"}),
		otelrunlimit.AttrOutcome:      attribute.StringValue("quota_denied"),
		otelrunlimit.AttrFailingIndex: attribute.IntValue(1),
		otelrunlimit.AttrPolicyID:     attribute.StringValue("auth.login"),
		otelrunlimit.AttrPolicyScope:  attribute.StringValue("identity"),
	}, attrs(batch))
	require.Equal(t, map[attribute.Key]attribute.Value{
		otelrunlimit.AttrLimiter:              attribute.StringValue("edge"),
		otelrunlimit.AttrBatchSize:            attribute.IntValue(1),
		otelrunlimit.AttrPolicies:             attribute.StringSliceValue([]string{"auth.login/identity"}),
		otelrunlimit.AttrOutcome:              attribute.StringValue("failed"),
		otelrunlimit.AttrMayHaveConsumedQuota: attribute.BoolValue(false),
		otelrunlimit.AttrErrorType:            attribute.StringValue("*memory.OpError"),
	}, attrs(failed))
	require.Equal(t, sdktrace.Status{Code: codes.Error, Description: err.Error()}, failed.Status())

	// The metrics are recorded in the span's context: their exemplars
	// point at the admissions' spans.
	var rm metricdata.ResourceMetrics
	require.NoError(t, f.reader.Collect(context.Background(), &rm))
	spanIDs := map[trace.SpanID]bool{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == otelrunlimit.MetricAdmissionLatency {
			for _, dp := range h.DataPoints {
				for _, ex := range dp.Exemplars {
					spanIDs[trace.SpanID(ex.SpanID)] = true
				}
			}
		}
	}
	require.NotEmpty(t, spanIDs)
	for id := range spanIDs {
		require.Contains(t, []trace.SpanID{check.SpanContext().SpanID(), batch.SpanContext().SpanID(),
			failed.SpanContext().SpanID()}, id)
	}
}

// TestCleanupSpans: each cleanup pass is a span with the store, what it
// removed and its error; a pass cut short by closing is no error.
func TestCleanupSpans(t *testing.T) {
	t.Parallel()
	f := setup(t, true)
	ctx := context.Background()
	for _, pass := range []struct {
		removed int
		err     error
	}{{7, nil}, {2, errors.New("backend down")}, {1, context.Canceled}} {
		passCtx := f.tel.StartCleanup(ctx, "postgres")
		require.True(t, trace.SpanContextFromContext(passCtx).IsValid(), "the pass runs in its span")
		f.tel.EndCleanup(passCtx, "postgres", pass.removed, pass.err)
	}
	ended := f.spans.Ended()
	require.Len(t, ended, 3)
	for i, removed := range []int{7, 2, 1} {
		require.Equal(t, otelrunlimit.SpanCleanup, ended[i].Name())
		require.Equal(t, attribute.StringValue("postgres"), attrs(ended[i])[otelrunlimit.AttrStore])
		require.Equal(t, attribute.IntValue(removed), attrs(ended[i])[otelrunlimit.AttrCleanupRemoved])
	}
	require.Equal(t, codes.Unset, ended[0].Status().Code)
	require.Equal(t, sdktrace.Status{Code: codes.Error, Description: "backend down"}, ended[1].Status())
	require.Equal(t, codes.Unset, ended[2].Status().Code, "closing is not a failure")

	s := f.collect(t)
	require.Equal(t, map[string]int64{"runlimit.store=postgres": 2}, s.sums[otelrunlimit.MetricCleanupRuns])
	require.Equal(t, map[string]int64{"runlimit.store=postgres": 10}, s.sums[otelrunlimit.MetricCleanupRemoved])
	require.Equal(t, map[string]int64{"runlimit.store=postgres": 1}, s.sums[otelrunlimit.MetricCleanupFailures])
}

// TestSpansWithoutMetrics: a tracer alone records spans and no metrics.
func TestSpansWithoutMetrics(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	// A no-op meter provider, not nil: nil would mean the global one.
	tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: metricnoop.NewMeterProvider(), TracerProvider: tp})
	require.NoError(t, err)
	store, err := memory.New(memory.Config{MaxKeys: 10})
	require.NoError(t, err)
	limiter, err := app.NewLimiter(store, app.LimiterConfig{Observer: tel.Observer()})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	p := domain.MustPolicy("auth.login", "identity", 1, time.Minute)
	_, err = limiter.Check(context.Background(), domain.NewCheck(p, hasher.KeyString(p, "alice")))
	require.NoError(t, err)
	require.Len(t, spans.Ended(), 1)
	stop, err := tel.WatchStore("memory", store.Stats)
	require.NoError(t, err)
	stop()
}

// TestUnsampledAdmissionsAreStillCounted: a tracer that samples nothing
// leaves the metrics whole.
func TestUnsampledAdmissionsAreStillCounted(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(f.spans))
	tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: f.mp, TracerProvider: tp})
	require.NoError(t, err)
	store, err := memory.New(memory.Config{MaxKeys: 10})
	require.NoError(t, err)
	limiter, err := app.NewLimiter(store, app.LimiterConfig{Name: "edge", Observer: tel.Observer()})
	require.NoError(t, err)
	p := domain.MustPolicy("auth.login", "identity", 1, time.Minute)
	_, err = limiter.Check(context.Background(), domain.NewCheck(p, f.hasher.KeyString(p, "alice")))
	require.NoError(t, err)
	require.Empty(t, f.spans.Ended())
	require.Equal(t, map[string]int64{checkAttrs("edge", "auth.login", "identity", "allowed"): 1},
		f.collect(t).sums[otelrunlimit.MetricAdmissions])
}

// panickyExporter is a span processor whose OnEnd panics, as a simple
// processor over a panicking exporter does.
type panickyExporter struct{ sdktrace.SpanProcessor }

func (panickyExporter) OnEnd(sdktrace.ReadOnlySpan) { panic("exporter") }

// panickyStart is a span processor whose OnStart panics, so that the
// tracer panics when the admission's span starts.
type panickyStart struct{ sdktrace.SpanProcessor }

func (panickyStart) OnStart(context.Context, sdktrace.ReadWriteSpan) { panic("processor") }

// TestPanickingSpanProcessorLosesNoCount: a span processor that panics
// when the admission's span starts or ends costs the admission its span,
// which the limiter logs, and neither its decision nor its count.
func TestPanickingSpanProcessorLosesNoCount(t *testing.T) {
	t.Parallel()
	for name, processor := range map[string]func(sdktrace.SpanProcessor) sdktrace.SpanProcessor{
		"on end":   func(p sdktrace.SpanProcessor) sdktrace.SpanProcessor { return panickyExporter{p} },
		"on start": func(p sdktrace.SpanProcessor) sdktrace.SpanProcessor { return panickyStart{p} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, false)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(processor(f.spans)))
			tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: f.mp, TracerProvider: tp})
			require.NoError(t, err)
			store, err := memory.New(memory.Config{MaxKeys: 10})
			require.NoError(t, err)
			var logs testkit.LogBuffer
			limiter, err := app.NewLimiter(store, app.LimiterConfig{Name: "edge", Observer: tel.Observer(), Logger: logs.Logger()})
			require.NoError(t, err)
			p := domain.MustPolicy("auth.login", "identity", 1, time.Minute)
			d, err := limiter.Check(context.Background(), domain.NewCheck(p, f.hasher.KeyString(p, "alice")))
			require.NoError(t, err)
			require.True(t, d.PermitsRequest())
			require.Contains(t, logs.String(), "observer panicked")
			s := f.collect(t)
			require.Equal(t, map[string]int64{checkAttrs("edge", "auth.login", "identity", "allowed"): 1},
				s.sums[otelrunlimit.MetricAdmissions])
			require.Equal(t, uint64(1), s.histograms[otelrunlimit.MetricAdmissionLatency][admissionAttrs("edge", "allowed")])
		})
	}
}

// TestNoTracerCostsNoAllocation: without a tracer the observer is a plain
// one, called after the store only, and an observed Check or CheckAll
// allocates no more than an unobserved one.
func TestNoTracerCostsNoAllocation(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts vary under the race detector")
	}
	f := setup(t, false)
	// A no-op tracer provider, not nil: nil would be the global one, which
	// another test may set.
	tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: f.mp, TracerProvider: tracenoop.NewTracerProvider()})
	require.NoError(t, err)
	_, isContext := tel.Observer().(app.ContextObserver)
	require.False(t, isContext, "nothing runs before the store")
	p := domain.MustPolicy("auth.login", "identity", 1<<40, time.Hour)
	q := domain.MustPolicy("auth.login", "client", 1<<40, time.Hour)
	check := domain.NewCheck(p, f.hasher.KeyString(p, "alice"))
	batch := []domain.Check{check, domain.NewCheck(q, f.hasher.KeyString(q, "198.51.100.7"))}
	ctx := context.Background()
	allocs := func(o app.Observer) (single, all float64) {
		store, err := memory.New(memory.Config{MaxKeys: 10})
		require.NoError(t, err)
		limiter, err := app.NewLimiter(store, app.LimiterConfig{Name: "edge", Observer: o})
		require.NoError(t, err)
		single = testing.AllocsPerRun(100, func() { _, _ = limiter.Check(ctx, check) })
		all = testing.AllocsPerRun(100, func() { _, _ = limiter.CheckAll(ctx, batch) })
		return single, all
	}
	plainSingle, plainAll := allocs(nil)
	observedSingle, observedAll := allocs(tel.Observer())
	require.Equal(t, plainSingle, observedSingle)
	require.Equal(t, plainAll, observedAll)
}
