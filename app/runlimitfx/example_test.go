package runlimitfx_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
)

// Add Runlimit to an fx application: the module provides the limiter and the
// key hasher, and the application's lifecycle starts and stops it. Switching
// to PostgreSQL is a config change: Backend wiring.BackendPostgres and a
// DatabaseURL (or a *pgxpool.Pool in the graph).
func ExampleModule() {
	os.Setenv("RUNLIMIT_KEY_SECRET", "example-only-secret-of-32-bytes!")

	var (
		limiter *app.Limiter
		hasher  domain.KeyHasher
	)
	fxApp := fx.New(
		fx.NopLogger, // quiet for the example
		runlimitfx.Module,
		fx.Supply(wiring.Config{
			Backend: wiring.BackendMemory,
			Memory:  memory.Config{MaxKeys: 50_000, Shards: 64},
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
