package otelrunlimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/metric"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// Metric names. The doc.go table lists their units and attributes.
const (
	MetricAdmissions       = "runlimit.admissions"
	MetricAdmissionErrors  = "runlimit.admission.errors"
	MetricAdmissionLatency = "runlimit.admission.duration"
	MetricHeadroom         = "runlimit.store.headroom"
	MetricFullestHeadroom  = "runlimit.store.fullest_partition.headroom"
	MetricCleanupRuns      = "runlimit.cleanup.runs"
	MetricCleanupRemoved   = "runlimit.cleanup.removed"
	MetricCleanupFailures  = "runlimit.cleanup.failures"
)

// LatencyBuckets are the bucket boundaries, in seconds, of
// runlimit.admission.duration: 1, 2.5 and 5 of every decade from 1 µs to
// 1 s, from a memory store's admission to a PostgreSQL store's worst.
var LatencyBuckets = []float64{
	0.000001, 0.0000025, 0.000005,
	0.00001, 0.000025, 0.00005,
	0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05,
	0.1, 0.25, 0.5,
	1,
}

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/runlimit/runlimit/adapters/otelrunlimit"

// instruments are the metrics of a [Telemetry].
type instruments struct {
	admissions      metric.Int64ObservableCounter
	errors          metric.Int64Counter
	duration        metric.Float64Histogram
	headroom        metric.Int64ObservableGauge
	fullest         metric.Int64ObservableGauge
	cleanupRuns     metric.Int64Counter
	cleanupRemoved  metric.Int64Counter
	cleanupFailures metric.Int64Counter
	meter           metric.Meter
	attrs           *attrCache
	// counted is the registration of runlimit.admissions' callback,
	// undone by Close: the meter would otherwise hold it, and this
	// Telemetry with it, as long as the provider lives. It is made with
	// the first admission counted, not by New: a Telemetry built for an
	// application that never starts (runlimitfx's constructor runs, and
	// a hook before the module's fails, so no OnStop closes it) must not
	// stay with the provider. settled says it has been made, or never
	// will be (Close came first).
	counted metric.Registration
	settled atomic.Bool
	// stopped is set by Close: nothing is recorded from then on. The
	// synchronous instruments stay with the provider, which a host's next
	// Telemetry on it shares by name, and would otherwise go on counting
	// this one's admissions beside a runlimit.admissions that no longer
	// does.
	stopped atomic.Bool

	mu      sync.Mutex
	watches map[*watchRegistration]struct{} // the stores watched
	closed  bool                            // by Close: no more watches
}

func newInstruments(mp metric.MeterProvider) (*instruments, error) {
	m := &instruments{meter: mp.Meter(ScopeName), attrs: newAttrCache()}
	var errs [9]error
	m.admissions, errs[0] = m.meter.Int64ObservableCounter(MetricAdmissions, metric.WithUnit("{admission}"),
		metric.WithDescription("Checks admitted, by the check's policy and the admission's outcome: each check of an allowed or failed admission, the deciding check of a denied one."))
	m.errors, errs[1] = m.meter.Int64Counter(MetricAdmissionErrors, metric.WithUnit("{error}"),
		metric.WithDescription("Admissions that failed closed with a store error, by whether quota may have been consumed."))
	m.duration, errs[2] = m.meter.Float64Histogram(MetricAdmissionLatency, metric.WithUnit("s"),
		metric.WithDescription("How long the store took to answer an admission."),
		metric.WithExplicitBucketBoundaries(LatencyBuckets...))
	m.headroom, errs[3] = m.meter.Int64ObservableGauge(MetricHeadroom, metric.WithUnit("{counter}"),
		metric.WithDescription("Free counter slots of a store, all partitions together."))
	m.fullest, errs[4] = m.meter.Int64ObservableGauge(MetricFullestHeadroom, metric.WithUnit("{counter}"),
		metric.WithDescription("Free counter slots of a store's fullest partition, the first to deny new keys."))
	m.cleanupRuns, errs[5] = m.meter.Int64Counter(MetricCleanupRuns, metric.WithUnit("{run}"),
		metric.WithDescription("Cleanup passes over a store, failed ones included."))
	m.cleanupRemoved, errs[6] = m.meter.Int64Counter(MetricCleanupRemoved, metric.WithUnit("{counter}"),
		metric.WithDescription("Expired counters removed by cleanup passes."))
	m.cleanupFailures, errs[7] = m.meter.Int64Counter(MetricCleanupFailures, metric.WithUnit("{failure}"),
		metric.WithDescription("Cleanup passes that ended with a store error."))
	if errs[0] == nil {
		// Registered and undone at once, so that a provider that refuses
		// the callback is reported by New; it is registered for good with
		// the first admission counted.
		var reg metric.Registration
		if reg, errs[8] = m.meter.RegisterCallback(m.observeCounts, m.admissions); reg != nil {
			_ = reg.Unregister()
		}
	}
	if err := errors.Join(errs[:]...); err != nil {
		m.unregister()
		return nil, err
	}
	return m, nil
}

// observeCounts is runlimit.admissions' callback.
func (m *instruments) observeCounts(_ context.Context, o metric.Observer) error {
	m.attrs.counts(func(n int64, opts []metric.ObserveOption) { o.ObserveInt64(m.admissions, n, opts...) })
	return nil
}

// registerCounts registers runlimit.admissions' callback, once, unless
// m is closed.
func (m *instruments) registerCounts() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.settled.Load() {
		return
	}
	m.settled.Store(true)
	if m.closed {
		return
	}
	// New registered the same callback: a provider that now refuses it
	// leaves the counts uncollected, as a failed collection would.
	m.counted, _ = m.meter.RegisterCallback(m.observeCounts, m.admissions)
}

// unregister undoes the callback registrations of m: the admissions' and
// every store's it watches.
func (m *instruments) unregister() {
	m.mu.Lock()
	counted, watches := m.counted, m.watches
	m.counted, m.watches, m.closed = nil, nil, true
	m.stopped.Store(true)
	m.mu.Unlock()
	if counted != nil {
		_ = counted.Unregister()
	}
	for stop := range watches {
		stop.unregister()
	}
}

// record adds e to the metrics. runlimit.admissions counts per check, by
// the check's policy: every check of an allowed admission (each consumed
// quota under its policy) and of a failed one, and only the deciding
// check of a denial or shadow denial (the others consumed nothing and
// decided nothing), so that "denied by which policy" is a sum by policy.
func (m *instruments) record(ctx context.Context, e *app.Event) {
	if !m.recording() {
		return
	}
	out := outcomeOf(e)
	if p, ok := e.Policy(e.Index); ok && e.Err == nil {
		m.count(e.Limiter, p, out)
	} else {
		for i := range e.Size {
			p, _ := e.Policy(i)
			m.count(e.Limiter, p, out)
		}
	}
	m.duration.Record(ctx, e.Duration.Seconds(), m.attrs.get(attrKey{limiter: e.Limiter, outcome: out}).record...)
	if e.Err != nil {
		m.errors.Add(ctx, 1, m.attrs.get(attrKey{limiter: e.Limiter, consumed: e.MayHaveConsumedQuota()}).add...)
	}
}

// recording reports whether m records: Close has not been called.
func (m *instruments) recording() bool { return !m.stopped.Load() }

// count adds a check of policy p to runlimit.admissions. The zero policy
// of an event a host made up, rather than a limiter, counts nothing.
func (m *instruments) count(limiter string, p domain.Policy, outcome string) {
	if p.IsZero() {
		return
	}
	if !m.settled.Load() {
		m.registerCounts()
	}
	m.attrs.get(attrKey{limiter: limiter, policy: p.ID().String(), scope: p.Scope().String(), outcome: outcome}).count.Add(1)
}
