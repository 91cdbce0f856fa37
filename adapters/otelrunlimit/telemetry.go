package otelrunlimit

import (
	"context"
	"fmt"
	"time"
	"unsafe"

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
//
// A Telemetry, and the observer it gives a limiter, print as an address
// under every printer that walks values by reflection: they reach the
// host's providers, whose exporters may hold credentials (an OTLP
// exporter's headers, such as a hosted backend's API key).
type Telemetry struct {
	// st is the *telemetryState held as an unsafe.Pointer, which printers
	// that walk values by reflection (fmt's bad-verb path, spew in
	// testify's diffs) print as an address and never follow. Plain
	// pointers led them from the meter to the provider's readers and on
	// to their exporters' configured headers.
	st unsafe.Pointer
}

// telemetryState is everything a [Telemetry] holds.
type telemetryState struct {
	metrics  *instruments // nil: no metrics
	tracer   trace.Tracer // nil: no spans
	interval time.Duration
	// statsTimeout is Config.StatsTimeout.
	statsTimeout time.Duration
	// now reads the clock that bounds how often stores are read.
	now      func() time.Time
	observer app.Observer
}

// state returns t's state, or nil for a nil or zero Telemetry.
func (t *Telemetry) state() *telemetryState {
	if t == nil {
		return nil
	}
	return (*telemetryState)(t.st)
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
	st := &telemetryState{interval: cfg.StatsInterval, statsTimeout: cfg.StatsTimeout, now: time.Now}
	if cfg.MeterProvider != nil {
		if st.metrics, err = newInstruments(cfg.MeterProvider); err != nil {
			return nil, err
		}
	}
	if cfg.TracerProvider != nil {
		st.tracer = cfg.TracerProvider.Tracer(ScopeName)
	}
	switch {
	case st.tracer != nil:
		st.observer = &tracingObserver{st: unsafe.Pointer(st)}
	case st.metrics != nil:
		st.observer = &metricsObserver{metrics: unsafe.Pointer(st.metrics)}
	}
	return &Telemetry{st: unsafe.Pointer(st)}, nil
}

// RecordsMetrics reports whether t records metrics: it has a meter
// provider that is not a no-op.
func (t *Telemetry) RecordsMetrics() bool { return t.instruments() != nil }

// instruments returns t's metrics, or nil when t records none.
func (t *Telemetry) instruments() *instruments {
	if st := t.state(); st != nil {
		return st.metrics
	}
	return nil
}

// tracer returns t's tracer, or nil when t records no spans.
func (t *Telemetry) tracer() trace.Tracer {
	if st := t.state(); st != nil {
		return st.tracer
	}
	return nil
}

// RecordsSpans reports whether t records spans: it has a tracer provider
// that is not a no-op.
func (t *Telemetry) RecordsSpans() bool { return t.tracer() != nil }

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
	if st := t.state(); st != nil {
		return st.observer
	}
	return nil
}

// WatchStore reports the headroom of a store through the gauges
// runlimit.store.headroom and runlimit.store.fullest_partition.headroom,
// under the name store, until stop is called. stats is the store's Stats
// method (a [ports.StatsReporter]'s, or one of wiring.Runtime.StatsFuncs);
// it is called on the exporter's collections, at most once per
// Config.StatsInterval, and a collection in between reports its last
// answer. A collection whose Stats fails, or reports no partitions
// (ports.Stats.Headroom is empty: a store without a bound), reports no
// headroom for that store, and the others' as usual. Collections wait
// for a reading no longer than Config.StatsTimeout (1 s by default) from
// its start, or than their context allows, then report no headroom for
// that store; the reading goes on in the background, one at a time, and
// serves the collections after it. stop (or [Telemetry.Close]) ends a
// reading in progress, whose collection would otherwise hold up the
// provider's Unregister, and the host's shutdown, for as long as a store
// held up by its database takes, and waits for it to return, so that no
// reading runs on after them: a stats function must return once its
// context ends, as the stores' Stats methods do. Without metrics WatchStore does
// nothing. A nil stats is an error matching [app.ErrInvalidConfig], which
// would otherwise panic in the exporter's collection.
func (t *Telemetry) WatchStore(store string, stats func(context.Context) (ports.Stats, error)) (stop func(), err error) {
	if stats == nil {
		return nil, fmt.Errorf("%w: otelrunlimit: WatchStore(%q) has a nil stats function", app.ErrInvalidConfig, store)
	}
	st := t.state()
	if st == nil || st.metrics == nil {
		return func() {}, nil
	}
	return st.metrics.watch(store, stats, st.interval, st.statsTimeout, st.now)
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
// Its observer records on into nothing (no count, latency or error of an
// admission that ends after Close), its EndCleanup counts no pass, and
// WatchStore does nothing: a host's next Telemetry on the same provider
// shares the instruments by name, and must not have them count a
// closed one's limiters. Spans go on: the tracer provider is the host's
// to shut down. Closing twice, or a nil Telemetry, does nothing.
func (t *Telemetry) Close() {
	if m := t.instruments(); m != nil {
		m.unregister()
	}
}

// metricsObserver records the admission metrics of each event. Its
// *instruments is held as an unsafe.Pointer, as a Telemetry holds its
// state: hosts print the limiter configs that hold the observer.
type metricsObserver struct{ metrics unsafe.Pointer }

// ObserveAdmission records e. It has no context: the measurements carry
// none, so no exemplar links them to a trace.
func (o *metricsObserver) ObserveAdmission(e app.Event) {
	(*instruments)(o.metrics).record(context.Background(), &e)
}
