package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// A store bounded to two keys, on a manual clock: a subject uses up its
// quota, a third subject finds the store full, and time frees both.
func Example() {
	clock := memory.NewManualClock()
	store, err := memory.New(memory.Config{MaxKeys: 2, Clock: clock})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		panic(err)
	}
	hasher, err := domain.NewKeyHasher([]byte("example-secret-of-at-least-32-bytes"))
	if err != nil {
		panic(err)
	}
	login := domain.MustPolicy("auth.login", "identity", 2, time.Minute)
	check := func(subject string) {
		d, err := limiter.Check(context.Background(), domain.NewCheck(login, hasher.KeyString(login, subject)))
		if err != nil {
			panic(err)
		}
		if a, ok := d.Allowance(); ok {
			fmt.Printf("%s: allowed, %d left for %v\n", subject, a.Remaining, a.ResetAfter)
			return
		}
		den, _ := d.Denial()
		retry, _ := den.RetryAfterSeconds()
		fmt.Printf("%s: denied (%v), retry in %d s\n", subject, den.Reason(), retry)
	}

	check("alice")
	clock.Advance(10 * time.Second)
	check("alice")
	check("alice")
	check("bob")
	check("carol")
	clock.Advance(50 * time.Second)
	check("alice")
	check("carol")
	// Output:
	// alice: allowed, 1 left for 1m0s
	// alice: allowed, 0 left for 50s
	// alice: denied (quota), retry in 50 s
	// bob: allowed, 1 left for 1m0s
	// carol: denied (storage-capacity), retry in 50 s
	// alice: allowed, 1 left for 1m0s
	// carol: denied (storage-capacity), retry in 10 s
}

// A panic while a shard is locked poisons the shard; it fails closed until
// recovered, and recovery empties it.
func ExampleStore_RecoverPoisoned() {
	clock := &explodingClock{}
	store, err := memory.New(memory.Config{MaxKeys: 10, Clock: clock})
	if err != nil {
		panic(err)
	}
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		panic(err)
	}
	hasher, err := domain.NewKeyHasher([]byte("example-secret-of-at-least-32-bytes"))
	if err != nil {
		panic(err)
	}
	p := domain.MustPolicy("api.calls", "account", 100, time.Hour)
	check := domain.NewCheck(p, hasher.KeyString(p, "account-42"))

	clock.explode = true
	func() {
		defer func() { fmt.Println("panic:", recover()) }()
		_, _ = limiter.Check(context.Background(), check)
	}()
	clock.explode = false

	_, err = limiter.Check(context.Background(), check)
	fmt.Println(err)
	fmt.Println("poisoned shards:", store.PoisonedShards())
	fmt.Println("recovered:", store.RecoverPoisoned())
	d, err := limiter.Check(context.Background(), check)
	fmt.Println(d.Outcome(), err)
	// Output:
	// panic: clock exploded
	// runlimit: memory store shard 0 is poisoned by an earlier panic
	// poisoned shards: [0]
	// recovered: 1
	// allowed <nil>
}

type explodingClock struct{ explode bool }

func (c *explodingClock) Now() time.Duration {
	if c.explode {
		panic("clock exploded")
	}
	return 0
}
