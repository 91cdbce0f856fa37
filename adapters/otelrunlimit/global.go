package otelrunlimit

import (
	"reflect"

	"github.com/runlimit/runlimit/internal/nilcheck"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// globalPkg is the package of the providers otel.GetMeterProvider and
// otel.GetTracerProvider return until the host sets its own: delegates
// that record nothing until then.
const globalPkg = "go.opentelemetry.io/otel/internal/global"

// meterProvider returns the provider to record metrics with: mp, or the
// global provider when mp is nil, or nil when that is a no-op. The
// global provider counts as a no-op until the host has set one: an
// observer over the delegate would cost every admission for nothing, and
// hosts set their providers at start, before they build what they use.
func meterProvider(mp metric.MeterProvider) metric.MeterProvider {
	if nilcheck.IsNil(mp) {
		mp = nil
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
		if isUnsetGlobal(mp) {
			return nil
		}
	}
	if _, ok := mp.(metricnoop.MeterProvider); ok {
		return nil
	}
	return mp
}

// tracerProvider is meterProvider for spans.
func tracerProvider(tp trace.TracerProvider) trace.TracerProvider {
	if nilcheck.IsNil(tp) {
		tp = nil
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
		if isUnsetGlobal(tp) {
			return nil
		}
	}
	if _, ok := tp.(tracenoop.TracerProvider); ok {
		return nil
	}
	return tp
}

// isUnsetGlobal reports whether p is OpenTelemetry's default global
// provider, the delegate that stands in until one is set. Its type is
// internal, so it is known by its package.
func isUnsetGlobal(p any) bool {
	t := reflect.TypeOf(p)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == globalPkg
}
