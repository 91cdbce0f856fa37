package wiring_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
)

// Open a memory-backed Runlimit without fx, and allow two password resets
// an hour per account.
func ExampleOpen() {
	// In a service the secret comes from secret storage into the
	// environment; every replica sharing a store uses the same one.
	os.Setenv("RUNLIMIT_KEY_SECRET", "example-only-secret-of-32-bytes!")

	ctx := context.Background()
	runtime, err := wiring.Open(ctx, wiring.Config{
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
