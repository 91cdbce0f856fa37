package promfx_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/examples/loginservice/login"
	"github.com/runlimit/runlimit/examples/loginservice/promfx"
)

// The module's meter provider records; its route serves what was
// recorded in Prometheus's text format. Beside login.Options the mux
// serves the route, and Runlimit's module is what records.
func Example() {
	var provider metric.MeterProvider
	var routes struct {
		fx.In

		Routes []login.Route `group:"loginservice.routes"`
	}
	app := fx.New(promfx.Module, fx.NopLogger, fx.Populate(&provider, &routes))
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer app.Stop(ctx)

	logins, err := provider.Meter("example").Int64Counter("example.logins",
		metric.WithUnit("{login}"), metric.WithDescription("Logins served."))
	if err != nil {
		fmt.Println(err)
		return
	}
	logins.Add(ctx, 2)

	metrics := routes.Routes[0]
	rec := httptest.NewRecorder()
	metrics.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	fmt.Println(metrics.Pattern, rec.Code)
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.Contains(line, "example_logins") {
			fmt.Println(line)
		}
	}
	// Output:
	// GET /metrics 200
	// # HELP example_logins_total Logins served.
	// # TYPE example_logins_total counter
	// example_logins_total 2
}
