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

// An observer counts decisions by policy and outcome, as a metrics exporter
// would, without ever seeing a subject.
func ExampleObserverFunc() {
	store, err := memory.New(memory.Config{MaxKeys: 1_000})
	if err != nil {
		log.Fatal(err)
	}
	observer := app.ObserverFunc(func(e app.Event) {
		if e.Err != nil {
			fmt.Println("error, may have consumed quota:", e.MayHaveConsumedQuota())
			return
		}
		p, _ := e.Policy(max(e.Index, 0))
		fmt.Printf("%s %s/%s %s\n", e.Limiter, p.ID(), p.Scope(), e.Outcome)
	})
	limiter, err := app.NewLimiter(store, app.LimiterConfig{Observer: observer, Name: "memory"})
	if err != nil {
		log.Fatal(err)
	}

	hasher, err := domain.NewKeyHasher([]byte("example-only-secret-of-32-bytes!"))
	if err != nil {
		log.Fatal(err)
	}
	policy, err := domain.ParsePolicy("auth.login", "identity", 1, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	check := domain.NewCheck(policy, hasher.KeyString(policy, "alice@example.test"))
	for range 2 {
		if _, err := limiter.Check(context.Background(), check); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// memory auth.login/identity allowed
	// memory auth.login/identity denied
}
