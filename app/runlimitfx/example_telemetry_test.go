package runlimitfx_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"time"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
)

// Export Runlimit's metrics: put an OpenTelemetry meter provider in the
// graph (here one read by hand; in a service, one with a Prometheus or
// OTLP exporter) and the module reports admissions by policy and outcome,
// their latency and each store's headroom.
func ExampleModule_openTelemetry() {
	reader := sdkmetric.NewManualReader()
	meterProvider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var (
		limiter *app.Limiter
		hasher  domain.KeyHasher
	)
	fxApp := fx.New(
		fx.NopLogger, // quiet for the example
		runlimitfx.Module,
		fx.Supply(wiring.Config{
			Memory:    memory.Config{MaxKeys: 1_000},
			KeySecret: wiring.NewSecret("example-only-secret-of-32-bytes!"),
		}),
		fx.Supply(fx.Annotate(meterProvider, fx.As(new(metric.MeterProvider)))),
		fx.Populate(&limiter, &hasher),
	)
	ctx := context.Background()
	if err := fxApp.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer fxApp.Stop(ctx)

	policy := domain.MustPolicy("auth.login", "identity", 2, time.Minute)
	check := domain.NewCheck(policy, hasher.KeyString(policy, "user@example.test"))
	for range 3 {
		if _, err := limiter.Check(ctx, check); err != nil {
			log.Fatal(err)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range data.DataPoints {
				policy, _ := dp.Attributes.Value("runlimit.policy.id")
				scope, _ := dp.Attributes.Value("runlimit.policy.scope")
				outcome, _ := dp.Attributes.Value("runlimit.outcome")
				lines = append(lines, fmt.Sprintf("%s %s/%s %s: %d", m.Name, policy.String(), scope.String(), outcome.String(), dp.Value))
			}
		case metricdata.Histogram[float64]:
			for _, dp := range data.DataPoints {
				outcome, _ := dp.Attributes.Value("runlimit.outcome")
				lines = append(lines, fmt.Sprintf("%s (%s) %s: %d measured", m.Name, m.Unit, outcome.String(), dp.Count))
			}
		case metricdata.Gauge[int64]:
			for _, dp := range data.DataPoints {
				store, _ := dp.Attributes.Value("runlimit.store")
				lines = append(lines, fmt.Sprintf("%s %s: %d", m.Name, store.String(), dp.Value))
			}
		}
	}
	slices.Sort(lines)
	for _, line := range lines {
		fmt.Println(line)
	}
	// Output:
	// runlimit.admission.duration (s) allowed: 2 measured
	// runlimit.admission.duration (s) quota_denied: 1 measured
	// runlimit.admissions auth.login/identity allowed: 2
	// runlimit.admissions auth.login/identity quota_denied: 1
	// runlimit.store.fullest_partition.headroom memory: 999
	// runlimit.store.headroom memory: 999
}
