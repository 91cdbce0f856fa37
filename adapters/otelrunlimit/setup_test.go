package otelrunlimit_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// testSecret is the key secret of the tests' hashers.
const testSecret = "otel-test-secret-of-at-least-32-bytes"

// fixture is a Telemetry over SDK providers that keep everything in
// memory: a manual metric reader and a span recorder.
type fixture struct {
	mp     *sdkmetric.MeterProvider
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tel    *otelrunlimit.Telemetry
	clock  *fakeNow
	hasher domain.KeyHasher
}

// edgeLimiter returns a memory store of maxKeys counters and a limiter
// named "edge" over it, observed by f's Telemetry.
func (f *fixture) edgeLimiter(t *testing.T, maxKeys int) (*memory.Store, *app.Limiter) {
	t.Helper()
	store, err := memory.New(memory.Config{MaxKeys: maxKeys})
	require.NoError(t, err)
	limiter, err := app.NewLimiter(store, app.LimiterConfig{Name: "edge", Observer: f.tel.Observer()})
	require.NoError(t, err)
	return store, limiter
}

// setup returns a fixture recording metrics, and spans too when traced.
func setup(t *testing.T, traced bool) *fixture {
	t.Helper()
	f := &fixture{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder(),
		clock: &fakeNow{t: time.Unix(1_700_000_000, 0)}}
	f.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader))
	t.Cleanup(func() { _ = f.mp.Shutdown(context.Background()) })
	cfg := otelrunlimit.Config{MeterProvider: f.mp}
	if traced {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		cfg.TracerProvider = tp
	}
	tel, err := otelrunlimit.New(cfg)
	require.NoError(t, err)
	otelrunlimit.SetNow(tel, f.clock.Now)
	f.tel = tel
	f.hasher, err = domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	return f
}

// fakeNow is a clock that moves only when told.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeNow) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeNow) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// snapshot is a collection, by metric name and then by attribute set
// rendered as "key=value,..." in key order.
type snapshot struct {
	units      map[string]string
	sums       map[string]map[string]int64
	gauges     map[string]map[string]int64
	histograms map[string]map[string]uint64 // counts
	bounds     map[string][]float64
	// attrValues holds every attribute value seen, exemplars' included.
	attrValues []string
}

func (f *fixture) collect(t *testing.T) snapshot {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, f.reader.Collect(context.Background(), &rm))
	s := snapshot{units: map[string]string{}, sums: map[string]map[string]int64{},
		gauges: map[string]map[string]int64{}, histograms: map[string]map[string]uint64{}, bounds: map[string][]float64{}}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, otelrunlimit.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			s.units[m.Name] = m.Unit
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				require.True(t, d.IsMonotonic, m.Name)
				s.sums[m.Name] = map[string]int64{}
				for _, dp := range d.DataPoints {
					s.sums[m.Name][s.render(dp.Attributes)] = dp.Value
					for _, ex := range dp.Exemplars {
						s.render(attribute.NewSet(ex.FilteredAttributes...))
					}
				}
			case metricdata.Gauge[int64]:
				s.gauges[m.Name] = map[string]int64{}
				for _, dp := range d.DataPoints {
					s.gauges[m.Name][s.render(dp.Attributes)] = dp.Value
				}
			case metricdata.Histogram[float64]:
				s.histograms[m.Name] = map[string]uint64{}
				for _, dp := range d.DataPoints {
					s.histograms[m.Name][s.render(dp.Attributes)] = dp.Count
					s.bounds[m.Name] = dp.Bounds
					for _, ex := range dp.Exemplars {
						s.render(attribute.NewSet(ex.FilteredAttributes...))
					}
				}
			default:
				t.Fatalf("metric %s has unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return s
}

// render returns set as "key=value,..." and remembers its values.
func (s *snapshot) render(set attribute.Set) string {
	var parts []string
	for _, kv := range set.ToSlice() {
		v := kv.Value.String()
		s.attrValues = append(s.attrValues, string(kv.Key), v)
		parts = append(parts, fmt.Sprintf("%s=%s", kv.Key, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// checkAttrs renders the attributes of a check's admission count.
func checkAttrs(limiter, policy, scope, outcome string) string {
	return fmt.Sprintf("runlimit.limiter=%s,runlimit.outcome=%s,runlimit.policy.id=%s,runlimit.policy.scope=%s",
		limiter, outcome, policy, scope)
}

// admissionAttrs renders the attributes of an admission's latency.
func admissionAttrs(limiter, outcome string) string {
	return fmt.Sprintf("runlimit.limiter=%s,runlimit.outcome=%s", limiter, outcome)
}
