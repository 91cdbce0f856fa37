package otelrunlimit_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// Count a login's admissions by policy and outcome, and watch the store's
// headroom. The meter provider here is read by hand; a service's exports
// to Prometheus or OTLP.
func ExampleNew() {
	reader := sdkmetric.NewManualReader()
	telemetry, err := otelrunlimit.New(otelrunlimit.Config{
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	if err != nil {
		log.Fatal(err)
	}
	store, err := memory.New(memory.Config{MaxKeys: 100})
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := app.NewLimiter(store, app.LimiterConfig{Observer: telemetry.Observer(), Name: "login"})
	if err != nil {
		log.Fatal(err)
	}
	stop, err := telemetry.WatchStore("login", store.Stats)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	hasher, err := domain.NewKeyHasher([]byte("example-only-secret-of-32-bytes!"))
	if err != nil {
		log.Fatal(err)
	}
	client := domain.MustPolicy("auth.login", "client", 40, time.Minute)
	identity := domain.MustPolicy("auth.login", "identity", 1, time.Minute)
	checks := []domain.Check{
		domain.NewCheck(client, hasher.KeyString(client, "client-network:192.0.2.4")),
		domain.NewCheck(identity, hasher.KeyString(identity, "user@example.test")),
	}
	for range 2 { // allowed, then denied by the identity's policy
		if _, err := limiter.CheckAll(context.Background(), checks); err != nil {
			log.Fatal(err)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range data.DataPoints {
				policy, _ := dp.Attributes.Value(otelrunlimit.AttrPolicyID)
				scope, _ := dp.Attributes.Value(otelrunlimit.AttrPolicyScope)
				outcome, _ := dp.Attributes.Value(otelrunlimit.AttrOutcome)
				lines = append(lines, fmt.Sprintf("%s %s/%s %s: %d", m.Name, policy.AsString(), scope.AsString(), outcome.AsString(), dp.Value))
			}
		case metricdata.Gauge[int64]:
			for _, dp := range data.DataPoints {
				lines = append(lines, fmt.Sprintf("%s: %d", m.Name, dp.Value))
			}
		}
	}
	slices.Sort(lines)
	for _, line := range lines {
		fmt.Println(line)
	}
	// Output:
	// runlimit.admissions auth.login/client allowed: 1
	// runlimit.admissions auth.login/identity allowed: 1
	// runlimit.admissions auth.login/identity quota_denied: 1
	// runlimit.store.fullest_partition.headroom: 98
	// runlimit.store.headroom: 98
}
