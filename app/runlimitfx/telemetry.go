package runlimitfx

import (
	"context"
	"log/slog"

	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
)

// telemetry is the module's OpenTelemetry: the graph's providers, or the
// global ones as the constructor finds them. It is decided once, when the
// limiters are built: an admission observer cannot be added to a limiter
// later, and one that forwarded to whatever provider turns up would cost
// every admission of a host that never sets one about twice its time.
//
// A host that sets the global providers in an OnStart hook, after the
// module's constructor ran, gets no telemetry from the module; the
// module's own OnStart says so in a warning (see [telemetry.lateWarning])
// and the "runlimit: started" record says whether metrics and spans are
// recorded.
//
// It is the Runtime's cleanup observer too.
type telemetry struct {
	// late says the constructor found no provider, in the graph or
	// global: a global one set afterwards is reported at start.
	late bool
	tel  *otelrunlimit.Telemetry
}

// newTelemetry builds the telemetry of the graph's providers, or of the
// global ones as they are now.
func newTelemetry(p Params) (*telemetry, error) {
	t, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: p.MeterProvider, TracerProvider: p.TracerProvider})
	if err != nil {
		return nil, err
	}
	return &telemetry{late: t.Observer() == nil && p.MeterProvider == nil && p.TracerProvider == nil, tel: t}, nil
}

// observer returns the admission observer to give the limiters, nil when
// the telemetry records nothing: the limiters then run unobserved.
func (m *telemetry) observer() app.Observer { return m.tel.Observer() }

// lateWarning returns the warning to log at start when a global provider
// was set after the constructor found none, and ok false otherwise.
func (m *telemetry) lateWarning() (msg string, ok bool) {
	if !m.late {
		return "", false
	}
	t, err := otelrunlimit.New(otelrunlimit.Config{})
	if err != nil {
		return "", false
	}
	// Built only to ask: its callback must not stay with the global
	// provider.
	t.Close()
	if t.Observer() == nil {
		return "", false
	}
	return "runlimit: a global OpenTelemetry provider was set after the module built its limiters; " +
		"Runlimit records no metrics or spans: provide a metric.MeterProvider or trace.TracerProvider in the graph, " +
		"or set the global providers before fx.New", true
}

// current returns the telemetry.
func (m *telemetry) current() *otelrunlimit.Telemetry { return m.tel }

// close unregisters the telemetry's metric callbacks from its provider,
// which may outlive the application (the global one, or a graph's that a
// host's tests share between applications).
func (m *telemetry) close() { m.tel.Close() }

// StartCleanup passes the pass on to the telemetry.
func (m *telemetry) StartCleanup(ctx context.Context, store string) context.Context {
	return m.tel.StartCleanup(ctx, store)
}

// EndCleanup passes the pass on to the telemetry.
func (m *telemetry) EndCleanup(ctx context.Context, store string, removed int, err error) {
	m.tel.EndCleanup(ctx, store, removed, err)
}

// StartAttrs says whether metrics and spans are recorded, for the
// Runtime's "runlimit: started" record.
func (m *telemetry) StartAttrs() []slog.Attr {
	return []slog.Attr{slog.Bool("metrics", m.tel.RecordsMetrics()), slog.Bool("tracing", m.tel.RecordsSpans())}
}
