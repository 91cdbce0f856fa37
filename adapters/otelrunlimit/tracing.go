package otelrunlimit

import (
	"context"
	"fmt"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/runlimit/runlimit/app"
)

// Span names.
const (
	SpanCheck    = "runlimit.check"     // an admission by Limiter.Check
	SpanCheckAll = "runlimit.check_all" // an admission by Limiter.CheckAll
	SpanCleanup  = "runlimit.cleanup"   // a cleanup pass over one store
)

// internalSpan is the admissions' start option, built once: an option
// made per call would cost an allocation.
var internalSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// tracingObserver records a span per admission, and the admission metrics
// when it has them. As an [app.ContextObserver] it starts the span before
// the store, in the caller's trace, so that the store's own spans nest
// under it.
//
// It holds its Telemetry's state as an unsafe.Pointer, which printers that
// walk values by reflection never follow (see [Telemetry]): hosts print
// the limiter configs that hold the observer.
type tracingObserver struct {
	st unsafe.Pointer // *telemetryState: its tracer, and its metrics when it has them
}

func (o *tracingObserver) state() *telemetryState { return (*telemetryState)(o.st) }

var _ app.ContextObserver = (*tracingObserver)(nil)

// StartAdmission starts the admission's span as a child of ctx's span.
// Its attributes are built only when the span is recorded: an unsampled
// admission pays for the sampling decision alone.
func (o *tracingObserver) StartAdmission(ctx context.Context, e app.Event) context.Context {
	name := SpanCheck
	if e.CheckAll {
		name = SpanCheckAll
	}
	ctx, span := o.state().tracer.Start(ctx, name, internalSpan...)
	// A host's span that panics as its attributes are set (the limiter
	// recovers the panic and never calls EndAdmission) is ended here, so
	// that no span the admission started stays open.
	started := false
	defer func() {
		if !started {
			span.End()
		}
	}()
	if span.IsRecording() {
		policies := make([]string, e.Size)
		for i := range policies {
			p, _ := e.Policy(i)
			policies[i] = p.ID().String() + "/" + p.Scope().String()
		}
		span.SetAttributes(AttrLimiter.String(e.Limiter), AttrBatchSize.Int(e.Size), AttrPolicies.StringSlice(policies))
	}
	started = true
	return ctx
}

// EndAdmission ends the span StartAdmission put in ctx with the outcome,
// the deciding check and its policy, or the error, and records the
// metrics with ctx, so that an exemplar can point at the span.
func (o *tracingObserver) EndAdmission(ctx context.Context, e app.Event) {
	span := trace.SpanFromContext(ctx)
	// The span is ended on every path: a panic of the host's meter
	// provider below, or of its span as the outcome is set, which the
	// limiter recovers, must not leave it open.
	defer span.End()
	// The metrics come first: ending the span runs the host's span
	// processors, whose panic (an exporter's, under a simple processor)
	// the limiter recovers, and which must not lose the admission's count.
	if m := o.state().metrics; m != nil {
		m.record(ctx, &e)
	}
	if span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 5)
		attrs = append(attrs, AttrOutcome.String(outcomeOf(&e)))
		if e.Err != nil {
			attrs = append(attrs, AttrMayHaveConsumedQuota.Bool(e.MayHaveConsumedQuota()),
				AttrErrorType.String(fmt.Sprintf("%T", e.Err)))
			span.SetStatus(codes.Error, e.Err.Error())
		} else if p, ok := e.Policy(e.Index); ok {
			attrs = append(attrs, AttrFailingIndex.Int(e.Index),
				AttrPolicyID.String(p.ID().String()), AttrPolicyScope.String(p.Scope().String()))
		}
		span.SetAttributes(attrs...)
	}
}

// ObserveAdmission records the metrics of an event that reached the
// observer without going through a limiter's context hooks.
func (o *tracingObserver) ObserveAdmission(e app.Event) {
	if m := o.state().metrics; m != nil {
		m.record(context.Background(), &e)
	}
}
