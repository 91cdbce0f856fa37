// Command memoryonly is the smallest Runlimit host: a memory store and the
// limiter over it, linking nothing outside the standard library. Its binary
// size is the one the README states. Run it: go run ./examples/memoryonly
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

func main() {
	store, err := memory.New(memory.Config{MaxKeys: 10_000, Shards: 8})
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		log.Fatal(err)
	}
	// A service loads a random secret of at least 32 bytes from secret storage.
	hasher, err := domain.NewKeyHasher([]byte("memoryonly-example-secret-32-bytes"))
	if err != nil {
		log.Fatal(err)
	}
	policy := domain.MustPolicy("auth.login", "identity", 3, time.Minute)
	check := domain.NewCheck(policy, hasher.KeyString(policy, "user@example.test"))
	for attempt := 1; attempt <= 4; attempt++ {
		decision, err := limiter.Check(context.Background(), check)
		if err != nil {
			log.Fatal(err) // fail closed
		}
		fmt.Printf("attempt %d: %s\n", attempt, decision.Outcome())
	}
}
