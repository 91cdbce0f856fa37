package otelrunlimit

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/ports"
)

// Telemetry turns a Runlimit deployment's events into OpenTelemetry
// metrics and spans: admissions through [Telemetry.Observer], cleanup
// passes as a wiring.CleanupObserver (its StartCleanup and EndCleanup
// methods), and stores' headroom through [Telemetry.WatchStore]. It is
// safe for concurrent use.
//
// A nil *Telemetry or a zero Telemetry records nothing, as one built
// without providers does: its Observer is nil, and its methods never
// panic.
type Telemetry struct {
	metrics  *instruments // nil: no metrics
	tracer   trace.Tracer // nil: no spans
	interval time.Duration
	// now reads the clock that bounds how often stores are read.
	now      func() time.Time
	observer app.Observer
}

// New returns the telemetry cfg describes. With neither a meter nor a
// tracer provider (none given, none set globally, or no-op ones) it
// records nothing, and [Telemetry.Observer] returns nil, so that a
// limiter pays nothing.
func New(cfg Config) (*Telemetry, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	t := &Telemetry{interval: cfg.StatsInterval, now: time.Now}
	if cfg.MeterProvider != nil {
		if t.metrics, err = newInstruments(cfg.MeterProvider); err != nil {
			return nil, err
		}
	}
	if cfg.TracerProvider != nil {
		t.tracer = cfg.TracerProvider.Tracer(ScopeName)
	}
	switch {
	case t.tracer != nil:
		t.observer = &tracingObserver{metrics: t.metrics, tracer: t.tracer}
	case t.metrics != nil:
		t.observer = &metricsObserver{metrics: t.metrics}
	}
	return t, nil
}

// RecordsMetrics reports whether t records metrics: it has a meter
// provider that is not a no-op.
func (t *Telemetry) RecordsMetrics() bool { return t != nil && t.metrics != nil }

// RecordsSpans reports whether t records spans: it has a tracer provider
// that is not a no-op.
func (t *Telemetry) RecordsSpans() bool { return t != nil && t.tracer != nil }

// NewObserver returns an observer that records the admission metrics with
// mp, for a limiter built without the wiring:
//
//	observer, err := otelrunlimit.NewObserver(meterProvider)
//	limiter, err := app.NewLimiter(store, app.LimiterConfig{Observer: observer, Name: "edge"})
//
// It returns nil when mp is a no-op (or nil and no global provider is
// set). Use [New] for spans, cleanup metrics and store headroom too.
func NewObserver(mp metric.MeterProvider) (app.Observer, error) {
	t, err := New(Config{MeterProvider: mp})
	if err != nil {
		return nil, err
	}
	return t.Observer(), nil
}

// Observer returns the observer to set as app.LimiterConfig.Observer or
// wiring.Config.Observer: it records the admission metrics, and with a
// tracer a span per admission, which makes it an [app.ContextObserver].
// Nil when t records nothing: a limiter then runs unobserved.
func (t *Telemetry) Observer() app.Observer {
	if t == nil {
		return nil
	}
	return t.observer
}

// WatchStore reports the headroom of a store through the gauges
// runlimit.store.headroom and runlimit.store.fullest_partition.headroom,
// under the name store, until stop is called. stats is the store's Stats
// method (a [ports.StatsReporter]'s, or one of wiring.Runtime.StatsFuncs);
// it is called on the exporter's collections, at most once per
// Config.StatsInterval, and a collection in between reports its last
// answer. A collection whose Stats fails reports no headroom for that
// store, and the others' as usual. Without metrics WatchStore does
// nothing. A nil stats is an error matching [app.ErrInvalidConfig], which
// would otherwise panic in the exporter's collection.
func (t *Telemetry) WatchStore(store string, stats func(context.Context) (ports.Stats, error)) (stop func(), err error) {
	if stats == nil {
		return nil, fmt.Errorf("%w: otelrunlimit: WatchStore(%q) has a nil stats function", app.ErrInvalidConfig, store)
	}
	if t == nil || t.metrics == nil {
		return func() {}, nil
	}
	return t.metrics.watch(store, stats, t.interval, t.now)
}

// Close stops t's metrics from being collected: it unregisters the
// callbacks t registered with its meter provider, the admission counts'
// and those of every store it watches (as their stop functions do), so
// that the provider no longer holds t. Call it when the limiters it
// observes are done with, before building another Telemetry on a
// provider that outlives them, such as the global one: a host that
// restarts its application (its tests) would otherwise have every
// collection run the callbacks of each Telemetry ever built. The
// admission counts of t leave the collection with it; the next
// collection's sum is a counter reset for a backend that reads it.
//
// Its observer records on into nothing, and WatchStore does nothing. Spans
// go on: the tracer provider is the host's to shut down. Closing twice, or
// a nil Telemetry, does nothing.
func (t *Telemetry) Close() {
	if t == nil || t.metrics == nil {
		return
	}
	t.metrics.unregister()
}

// metricsObserver records the admission metrics of each event.
type metricsObserver struct{ metrics *instruments }

// ObserveAdmission records e. It has no context: the measurements carry
// none, so no exemplar links them to a trace.
func (o *metricsObserver) ObserveAdmission(e app.Event) {
	o.metrics.record(context.Background(), &e)
}
