package promfx

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/examples/loginservice/login"
)

// ServiceName is the service.name of the metrics' resource (the
// service_name label of target_info) unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES name another.
const ServiceName = "loginservice"

// Pattern is the route the metrics are served on.
const Pattern = "GET /metrics"

// Module provides, from [New], a metric.MeterProvider whose reader is the
// OpenTelemetry Prometheus exporter, the *prometheus.Registry the exporter
// is registered with, and the [login.Route] GET /metrics that serves that
// registry, in [login.RoutesGroup]. Beside login.Options, Runlimit's
// module takes the meter provider and records into it.
var Module = fx.Module("promfx", fx.Provide(New))

// Params is what [New] takes from the graph.
type Params struct {
	fx.In

	// Lifecycle shuts the meter provider down on OnStop.
	Lifecycle fx.Lifecycle
	// Logger receives the errors of a scrape. Optional: without one,
	// slog.Default().
	Logger *slog.Logger `optional:"true"`
}

// Result is what [New] provides.
type Result struct {
	fx.Out

	// MeterProvider records every metric the graph's instruments make,
	// for the exporter to read at each scrape.
	MeterProvider metric.MeterProvider
	// Registry is the service's own registry, which the exporter is
	// registered with and GET /metrics serves. A host registers more
	// collectors with it (the Go runtime's, say) to serve them beside.
	Registry *prometheus.Registry
	// Route is GET /metrics, in the login service's routes group.
	Route login.Route `group:"loginservice.routes"`
}

// New builds the exporter on a registry of its own, so that nothing
// another package registers with prometheus.DefaultRegisterer is served,
// and no two services in one process (two tests, say) meet in one
// registry and fail on duplicate collectors.
func New(p Params) (Result, error) {
	logger := p.Logger
	if logger == nil {
		logger = slog.Default()
	}
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		// Named outright, as the exporter plans to change its default:
		// runlimit.admissions is served as runlimit_admissions_total and
		// runlimit.admission.duration as
		// runlimit_admission_duration_seconds, the names Prometheus users
		// expect, and attribute keys with underscores for dots.
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		// Runlimit's instruments are the graph's only ones and their names
		// carry their namespace: the otel_scope_* labels on every series
		// would say nothing that the name does not.
		otelprom.WithoutScopeInfo(),
	)
	if err != nil {
		return Result{}, err
	}
	res, err := resource.New(context.Background(),
		resource.WithAttributes(attribute.String("service.name", ServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // last, so that the operator's names win
	)
	if err != nil {
		return Result{}, err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithResource(res))
	// Appended before the hooks of anything that takes the provider, so
	// run after them on stop: the runtime stops recording before the
	// provider shuts down.
	p.Lifecycle.Append(fx.StopHook(provider.Shutdown))
	handler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	})
	return Result{
		MeterProvider: provider,
		Registry:      reg,
		Route:         login.Route{Pattern: Pattern, Handler: handler},
	}, nil
}
