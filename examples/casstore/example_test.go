package casstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/examples/casstore"
)

// A limiter over the optimistic store: two login attempts per minute for
// one subject, the third denied.
func Example() {
	store, err := casstore.New(casstore.Config{Capacity: 1000})
	if err != nil {
		panic(err)
	}
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		panic(err)
	}
	id, _ := domain.NewPolicyID("auth.login")
	scope, _ := domain.NewScopeID("identity")
	policy, _ := domain.NewPolicy(id, scope, 2, time.Minute)
	hasher, _ := domain.NewKeyHasher([]byte("an example secret of at least 32 bytes"))
	check := domain.NewCheck(policy, hasher.KeyString(policy, "user@example.test"))

	for range 3 {
		d, err := limiter.Check(context.Background(), check)
		if err != nil {
			panic(err)
		}
		if a, ok := d.Allowance(); ok {
			fmt.Printf("%s, %d left\n", d.Outcome(), a.Remaining)
			continue
		}
		den, _ := d.Denial()
		seconds, _ := den.RetryAfterSeconds()
		fmt.Printf("%s (%s), retry within %d s\n", d.Outcome(), den.Reason(), seconds)
	}
	// Output:
	// allowed, 1 left
	// allowed, 0 left
	// denied (quota), retry within 60 s
}
