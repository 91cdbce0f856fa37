package otelrunlimit_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
)

// Hand the telemetry to a Runtime built with the wiring alone, without fx:
// the runtime's admissions, its cleanup passes and its stores' headroom.
// The providers here are read by hand; a service's export.
func Example_wiring() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	ctx := context.Background()
	cfg := wiring.Config{
		Memory:    memory.Config{MaxKeys: 100},
		KeySecret: wiring.NewSecret("example-only-secret-of-32-bytes!"),
		Logger:    slog.New(slog.DiscardHandler), // quiet for the example
	}

	telemetry, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: mp, TracerProvider: tp})
	if err != nil {
		log.Fatal(err)
	}
	defer telemetry.Close()             // unregisters its callbacks from mp
	cfg.Observer = telemetry.Observer() // admissions: metrics and spans
	cfg.CleanupObserver = telemetry     // cleanup passes
	runtime, err := wiring.Open(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer runtime.Close(ctx)
	for name, stats := range runtime.StatsFuncs() {
		stop, err := telemetry.WatchStore(name, stats) // headroom gauges
		if err != nil {
			log.Fatal(err)
		}
		defer stop()
	}

	policy := domain.MustPolicy("api.search", "client", 10, time.Minute)
	check := domain.NewCheck(policy, runtime.KeyHasher().KeyString(policy, "client-network:192.0.2.4"))
	if _, err := runtime.Limiter().Check(ctx, check); err != nil {
		log.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			if m.Name == "runlimit.admissions" {
				outcome, _ := data.DataPoints[0].Attributes.Value(otelrunlimit.AttrOutcome)
				fmt.Printf("%s %s: %d\n", m.Name, outcome.AsString(), data.DataPoints[0].Value)
			}
		case metricdata.Gauge[int64]:
			if m.Name == "runlimit.store.headroom" {
				store, _ := data.DataPoints[0].Attributes.Value(otelrunlimit.AttrStore)
				fmt.Printf("%s %s: %d\n", m.Name, store.AsString(), data.DataPoints[0].Value)
			}
		}
	}
	fmt.Println("span:", spans.Ended()[0].Name())
	// Output:
	// runlimit.admissions allowed: 1
	// runlimit.store.headroom memory: 99
	// span: runlimit.check
}
