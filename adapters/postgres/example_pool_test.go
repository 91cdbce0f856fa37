package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// Open a store on a pool the application owns and check a login against
// it. The schema must have been applied (runlimit migrate, or the
// migrations package). The store borrows the pool: closing the store never
// closes the pool. This example needs a database, so it is compiled but not
// run.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	store, err := postgres.New(pool, postgres.Config{
		RowsPerShard: 4096, // the capacity: 256 shards of this many rows
	})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		log.Fatal(err)
	}

	hasher, err := domain.NewKeyHasher([]byte(os.Getenv("RUNLIMIT_KEY_SECRET")))
	if err != nil {
		log.Fatal(err)
	}
	policy := domain.MustPolicy("auth.login", "identity", 8, time.Minute)
	decision, err := limiter.Check(ctx, domain.NewCheck(policy, hasher.KeyString(policy, "user@example.test")))
	if err != nil {
		log.Fatal(err) // fail closed; ports.MayHaveConsumedQuota(err) says whether to retry
	}
	fmt.Println("permitted:", decision.PermitsRequest())
}
