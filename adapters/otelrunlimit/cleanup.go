package otelrunlimit

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// StartCleanup starts a runlimit.cleanup span for a pass over store, when
// t has a tracer, and returns the context the pass runs with. With
// EndCleanup it makes t a wiring.CleanupObserver (Config.CleanupObserver).
//
// A nil ctx stands for context.Background here and in EndCleanup.
func (t *Telemetry) StartCleanup(ctx context.Context, store string) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	tracer := t.tracer()
	if tracer == nil {
		return ctx
	}
	ctx, _ = tracer.Start(ctx, SpanCleanup, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(AttrStore.String(store)))
	return ctx
}

// EndCleanup counts the pass (runlimit.cleanup.runs, .removed and
// .failures) and ends its span. A pass cut short because the Runtime is
// closing (a cancelled context) is neither a run nor a failure; what it
// removed still counts.
func (t *Telemetry) EndCleanup(ctx context.Context, store string, removed int, err error) {
	st := t.state()
	if st == nil {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	stopping := err != nil && errors.Is(err, context.Canceled)
	var span trace.Span
	if st.tracer != nil {
		// Ended on every path: a panic of the host's meter provider
		// below, which the Runtime's loop recovers, must not leave the
		// pass's span open.
		span = trace.SpanFromContext(ctx)
		defer span.End()
	}
	if m := st.metrics; m != nil && m.recording() {
		set := metric.WithAttributes(AttrStore.String(store))
		if removed > 0 {
			m.cleanupRemoved.Add(ctx, int64(removed), set)
		}
		if !stopping {
			m.cleanupRuns.Add(ctx, 1, set)
			if err != nil {
				m.cleanupFailures.Add(ctx, 1, set)
			}
		}
	}
	if span == nil {
		return
	}
	span.SetAttributes(AttrCleanupRemoved.Int(removed))
	if err != nil && !stopping {
		span.SetAttributes(AttrErrorType.String(fmt.Sprintf("%T", err)))
		span.SetStatus(codes.Error, err.Error())
	}
}
