package runlimitfx_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/examples/mapstore"
	"github.com/runlimit/runlimit/ports"
)

// Add Runlimit to an fx application: the module provides the limiter and the
// key hasher, and the application's lifecycle starts and stops it. Switching
// to PostgreSQL is a config change: Backend wiring.BackendPostgres and a
// DatabaseURL (or a *pgxpool.Pool in the graph).
func ExampleModule() {
	var (
		limiter *app.Limiter
		hasher  domain.KeyHasher
	)
	fxApp := fx.New(
		fx.NopLogger, // quiet for the example; in a service it would hide why Run exits
		runlimitfx.Module,
		fx.Supply(wiring.Config{
			Backend: wiring.BackendMemory,
			Memory:  memory.Config{MaxKeys: 50_000, Shards: 64},
			// From secret storage in a service (or KeySecretFunc, or the
			// RUNLIMIT_KEY_SECRET variable when neither is set).
			KeySecret: wiring.NewSecret("example-only-secret-of-32-bytes!"),
		}),
		// A service takes them in its own constructors instead.
		fx.Populate(&limiter, &hasher),
	)
	ctx := context.Background()
	if err := fxApp.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer fxApp.Stop(ctx)

	policy, err := domain.ParsePolicy("api.search", "client", 1, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	check := domain.NewCheck(policy, hasher.KeyString(policy, "client-network:192.0.2.4"))
	for range 2 {
		decision, err := limiter.Check(ctx, check)
		if err != nil {
			log.Fatal(err) // fail closed
		}
		fmt.Println("permitted:", decision.PermitsRequest())
	}
	// Output:
	// permitted: true
	// permitted: false
}

// Run Runlimit over a store of your own, here the example adapter of
// examples/mapstore: the module opens it, runs its cleanup loop (it is a
// ports.Cleaner) and closes it on stop if it is a ports.Closer.
func Example_customStore() {
	var (
		limiter *app.Limiter
		hasher  domain.KeyHasher
	)
	fxApp := fx.New(
		fx.NopLogger, // quiet for the example; in a service it would hide why Run exits
		runlimitfx.Module,
		fx.Supply(wiring.Config{
			NewStoreFunc: func(context.Context) (ports.Store, error) {
				store, err := mapstore.New(mapstore.Config{Capacity: 10_000})
				return store, err
			},
			KeySecret: wiring.NewSecret("example-only-secret-of-32-bytes!"),
		}),
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
		decision, err := limiter.Check(ctx, check)
		if err != nil {
			log.Fatal(err) // fail closed
		}
		fmt.Println("permitted:", decision.PermitsRequest())
	}
	// Output:
	// permitted: true
	// permitted: true
	// permitted: false
}

// Wire the module's readiness check into the host's readiness probe: 503
// until the application has started and once it stops, 200 in between.
func ExampleReadyFunc() {
	var mux *http.ServeMux
	fxApp := fx.New(
		fx.NopLogger, // quiet for the example; in a service it would hide why Run exits
		runlimitfx.Module,
		fx.Supply(wiring.Config{
			Memory:    memory.Config{MaxKeys: 50_000},
			KeySecret: wiring.NewSecret("example-only-secret-of-32-bytes!"),
			Logger:    slog.New(slog.DiscardHandler),
		}),
		fx.Provide(func(ready runlimitfx.ReadyFunc) *http.ServeMux {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
				if err := ready(r.Context()); err != nil { // a runlimitfx.ReadyFunc
					http.Error(w, "not ready", http.StatusServiceUnavailable)
					return
				}
				fmt.Fprintln(w, "ready")
			})
			return mux
		}),
		fx.Populate(&mux),
	)
	probe := func() {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		fmt.Print(w.Code, " ", w.Body.String())
	}

	ctx := context.Background()
	probe()
	if err := fxApp.Start(ctx); err != nil {
		log.Fatal(err)
	}
	probe()
	if err := fxApp.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	probe()
	// Output:
	// 503 not ready
	// 200 ready
	// 503 not ready
}
