package promfx_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/runlimit/runlimit/examples/loginservice/login"
	"github.com/runlimit/runlimit/examples/loginservice/promfx"
)

// fixture is the module's results, taken from a running application.
type fixture struct {
	app      *fxtest.App
	provider metric.MeterProvider
	registry *prometheus.Registry
	routes   []login.Route
}

func setup(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{}
	var routes struct {
		fx.In

		Routes []login.Route `group:"loginservice.routes"`
	}
	f.app = fxtest.New(t, promfx.Module, fx.Populate(&f.provider, &f.registry, &routes)).RequireStart()
	f.routes = routes.Routes
	return f
}

// scrape serves GET /metrics through the module's route.
func (f *fixture) scrape(t *testing.T) string {
	t.Helper()
	require.Len(t, f.routes, 1)
	require.Equal(t, promfx.Pattern, f.routes[0].Pattern)
	rec := httptest.NewRecorder()
	f.routes[0].Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return string(body)
}

// count records n on a counter named name through the module's provider.
func (f *fixture) count(t *testing.T, name string, n int64) {
	t.Helper()
	c, err := f.provider.Meter("promfx_test").Int64Counter(name)
	require.NoError(t, err)
	c.Add(context.Background(), n)
}

// TestModuleServesItsOwnRegistry: what the provider records is served on
// GET /metrics, from the provided registry, and never reaches
// Prometheus's default registry.
func TestModuleServesItsOwnRegistry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	defer f.app.RequireStop()
	f.count(t, "promfx.test.own_registry", 3)

	body := f.scrape(t)
	require.Contains(t, body, "# TYPE promfx_test_own_registry_total counter\n")
	require.Contains(t, body, "promfx_test_own_registry_total 3\n")
	require.Contains(t, body, `target_info{service_name="loginservice",`)
	require.NotContains(t, body, "otel_scope_name", "no scope labels")

	families, err := f.registry.Gather()
	require.NoError(t, err)
	require.True(t, hasFamily(families, "promfx_test_own_registry_total"), "the provided registry holds the exporter")
	families, err = prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	require.False(t, hasFamily(families, "promfx_test_own_registry_total"), "the default registry does not")
	require.False(t, hasFamily(families, "target_info"), "the default registry does not")
}

// TestModuleShutsTheProviderDownOnStop: once the application stops, the
// provider is shut down and a scrape finds nothing it recorded.
func TestModuleShutsTheProviderDownOnStop(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.count(t, "promfx.test.stop", 1)
	require.Contains(t, f.scrape(t), "promfx_test_stop_total 1\n")
	f.app.RequireStop()
	require.NotContains(t, f.scrape(t), "promfx_test_stop_total")
}

// hasFamily says whether families holds a metric family named name.
func hasFamily(families []*dto.MetricFamily, name string) bool {
	for _, mf := range families {
		if mf.GetName() == name {
			return true
		}
	}
	return false
}
