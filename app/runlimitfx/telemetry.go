package runlimitfx

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
)

// telemetry is the module's OpenTelemetry: the graph's providers, or the
// global ones. A host often sets the global providers in an OnStart hook,
// after the module's constructor has run, which OpenTelemetry's delegating
// globals allow: when the constructor finds neither a provider in the
// graph nor a global one set, the module looks at the globals again when
// it starts, before the Runtime does, and records to them from then on.
//
// It is the Runtime's cleanup observer, passing each pass on to the
// telemetry of the moment, and reports in the Runtime's "runlimit:
// started" record whether metrics and spans are recorded.
type telemetry struct {
	// late says the global providers are looked at again at start.
	late bool
	tel  atomic.Pointer[otelrunlimit.Telemetry]
}

// newTelemetry builds the telemetry of the graph's providers, or of the
// global ones as they are now.
func newTelemetry(p Params) (*telemetry, error) {
	t, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: p.MeterProvider, TracerProvider: p.TracerProvider})
	if err != nil {
		return nil, err
	}
	m := &telemetry{late: t.Observer() == nil && p.MeterProvider == nil && p.TracerProvider == nil}
	m.tel.Store(t)
	return m, nil
}

// observer returns the admission observer to give the limiters: the
// telemetry's own when it is decided, nil when it records nothing and
// never will (the limiters then run unobserved), and m itself, which
// passes each admission on to the telemetry of the moment, when the
// globals are to be looked at again at start.
func (m *telemetry) observer() app.Observer {
	if m.late {
		return m
	}
	return m.tel.Load().Observer()
}

// resolve looks at the global providers again, if m is late: a provider
// the host set since the constructor ran is recorded to from now on.
func (m *telemetry) resolve() error {
	if !m.late || m.tel.Load().Observer() != nil {
		return nil
	}
	t, err := otelrunlimit.New(otelrunlimit.Config{})
	if err != nil {
		return err
	}
	m.tel.Store(t)
	return nil
}

// current returns the telemetry of the moment.
func (m *telemetry) current() *otelrunlimit.Telemetry { return m.tel.Load() }

// ObserveAdmission passes e on to the telemetry's observer, if any.
func (m *telemetry) ObserveAdmission(e app.Event) {
	if o := m.current().Observer(); o != nil {
		o.ObserveAdmission(e)
	}
}

// StartAdmission passes e on to the telemetry's observer when it traces.
func (m *telemetry) StartAdmission(ctx context.Context, e app.Event) context.Context {
	if co, ok := m.current().Observer().(app.ContextObserver); ok {
		return co.StartAdmission(ctx, e)
	}
	return ctx
}

// EndAdmission passes e on to the telemetry's observer.
func (m *telemetry) EndAdmission(ctx context.Context, e app.Event) {
	switch o := m.current().Observer().(type) {
	case app.ContextObserver:
		o.EndAdmission(ctx, e)
	case app.Observer:
		o.ObserveAdmission(e)
	}
}

// StartCleanup passes the pass on to the telemetry.
func (m *telemetry) StartCleanup(ctx context.Context, store string) context.Context {
	return m.current().StartCleanup(ctx, store)
}

// EndCleanup passes the pass on to the telemetry.
func (m *telemetry) EndCleanup(ctx context.Context, store string, removed int, err error) {
	m.current().EndCleanup(ctx, store, removed, err)
}

// StartAttrs says whether metrics and spans are recorded, for the
// Runtime's "runlimit: started" record.
func (m *telemetry) StartAttrs() []slog.Attr {
	t := m.current()
	return []slog.Attr{slog.Bool("metrics", t.RecordsMetrics()), slog.Bool("tracing", t.RecordsSpans())}
}
