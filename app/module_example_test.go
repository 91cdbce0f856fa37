package app_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// Open a memory-backed Runlimit without fx, and allow two password resets
// an hour per account.
func ExampleOpen() {
	// In a service the secret comes from secret storage into the
	// environment; every replica sharing a store uses the same one.
	os.Setenv("RUNLIMIT_KEY_SECRET", "example-only-secret-of-32-bytes!")

	ctx := context.Background()
	runtime, err := app.Open(ctx, app.Config{
		Memory: memory.Config{MaxKeys: 50_000, Shards: 64},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer runtime.Close(ctx)

	policy, err := domain.ParsePolicy("account.password-reset", "account", 2, time.Hour)
	if err != nil {
		log.Fatal(err)
	}
	key := runtime.KeyHasher().KeyString(policy, "account-42")
	for attempt := 1; attempt <= 3; attempt++ {
		decision, err := runtime.Limiter().Check(ctx, domain.NewCheck(policy, key))
		if err != nil {
			log.Fatal(err) // fail closed
		}
		fmt.Printf("attempt %d permitted: %t\n", attempt, decision.PermitsRequest())
	}
	// Output:
	// attempt 1 permitted: true
	// attempt 2 permitted: true
	// attempt 3 permitted: false
}

// Add Runlimit to an fx application: the module provides the limiter and the
// key hasher, and the application's lifecycle starts and stops it. Switching
// to PostgreSQL is a config change: Backend app.BackendPostgres and a
// DatabaseURL (or a *pgxpool.Pool in the graph).
func ExampleModule() {
	os.Setenv("RUNLIMIT_KEY_SECRET", "example-only-secret-of-32-bytes!")

	var (
		limiter *app.Limiter
		hasher  domain.KeyHasher
	)
	fxApp := fx.New(
		fx.NopLogger, // quiet for the example
		app.Module,
		fx.Supply(app.Config{
			Backend: app.BackendMemory,
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
