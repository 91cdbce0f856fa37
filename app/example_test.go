package app_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// Admit a login only if both the client's limit (40 a minute) and the
// identity's limit (8 a minute) have room: both counters are consumed, or
// neither is.
func Example() {
	clientPolicy, err := domain.ParsePolicy("auth.login", "client", 40, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	identityPolicy, err := domain.ParsePolicy("auth.login", "identity", 8, time.Minute)
	if err != nil {
		log.Fatal(err)
	}

	// Load one stable, random secret of at least 32 bytes from secret
	// storage; every replica sharing a store must use the same one.
	secret := []byte("example-only-secret-of-32-bytes!")
	hasher, err := domain.NewKeyHasher(secret)
	if err != nil {
		log.Fatal(err)
	}

	// The application extracts the client address and normalizes the
	// identity; Runlimit only ever sees their HMAC keys.
	client := hasher.KeyString(clientPolicy, "client-network:192.0.2.4")
	identity := hasher.KeyString(identityPolicy, "user@example.test")

	store, err := memory.New(memory.Config{
		MaxKeys: 50_000,
		Shards:  64,
		Clock:   memory.NewManualClock(), // frozen for a reproducible example; omit it in a service
	})
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		log.Fatal(err)
	}

	checks := []domain.Check{
		domain.NewCheck(clientPolicy, client),
		domain.NewCheck(identityPolicy, identity),
	}
	for attempt := 1; attempt <= 9; attempt++ {
		decision, err := limiter.CheckAll(context.Background(), checks)
		if err != nil {
			log.Fatal(err) // fail closed: a store error never admits
		}
		if index, denial, denied := decision.Denied(); denied {
			if seconds, ok := denial.RetryAfterSeconds(); ok {
				fmt.Printf("attempt %d: check %d denied; retry after %d seconds\n", attempt, index, seconds)
			} else {
				fmt.Printf("attempt %d: check %d denied; retry time unavailable\n", attempt, index)
			}
			continue
		}
		identityLeft, _ := decision.Decisions()[1].Allowance()
		fmt.Printf("attempt %d: admitted, %d left for this identity\n", attempt, identityLeft.Remaining)
	}
	// Output:
	// attempt 1: admitted, 7 left for this identity
	// attempt 2: admitted, 6 left for this identity
	// attempt 3: admitted, 5 left for this identity
	// attempt 4: admitted, 4 left for this identity
	// attempt 5: admitted, 3 left for this identity
	// attempt 6: admitted, 2 left for this identity
	// attempt 7: admitted, 1 left for this identity
	// attempt 8: admitted, 0 left for this identity
	// attempt 9: check 1 denied; retry after 60 seconds
}
