package promfx_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// Serve Runlimit's metrics for Prometheus without fx, as the project
// README shows: the OpenTelemetry Prometheus exporter, with its defaults,
// over a registry of the host's own. Prometheus spells the names with
// underscores and unit suffixes.
func Example_withoutFx() {
	ctx := context.Background()
	mux := http.NewServeMux()

	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		log.Fatal(err)
	}
	meterProvider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer meterProvider.Shutdown(ctx)
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))

	telemetry, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: meterProvider})
	if err != nil {
		log.Fatal(err)
	}
	defer telemetry.Close()
	store, err := memory.New(memory.Config{MaxKeys: 100})
	if err != nil {
		log.Fatal(err)
	}
	stop, err := telemetry.WatchStore("memory", store.Stats)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	limiter, err := app.NewLimiter(store, app.LimiterConfig{Observer: telemetry.Observer()})
	if err != nil {
		log.Fatal(err)
	}
	hasher, err := domain.NewKeyHasher([]byte("example-only-secret-of-32-bytes!"))
	if err != nil {
		log.Fatal(err)
	}
	policy := domain.MustPolicy("api.search", "client", 10, time.Minute)
	if _, err := limiter.Check(ctx, domain.NewCheck(policy, hasher.KeyString(policy, "client-network:192.0.2.4"))); err != nil {
		log.Fatal(err)
	}

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "# TYPE runlimit_") {
			fmt.Println(line)
		}
	}
	// Output:
	// # TYPE runlimit_admission_duration_seconds histogram
	// # TYPE runlimit_admissions_total counter
	// # TYPE runlimit_store_fullest_partition_headroom gauge
	// # TYPE runlimit_store_headroom gauge
}
