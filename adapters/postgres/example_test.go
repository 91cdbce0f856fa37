package postgres_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/postgres"
)

// A configuration is checked when the store is built, before any
// connection is made.
func ExampleNew_invalidConfig() {
	pool, err := pgxpool.New(context.Background(), "postgres://runlimit@127.0.0.1:1/none")
	if err != nil {
		panic(err)
	}
	defer pool.Close()

	_, err = postgres.New(pool, postgres.Config{RowsPerShard: 100_000})
	fmt.Println(errors.Is(err, postgres.ErrInvalidConfig))
	fmt.Println(err)

	store, err := postgres.New(pool, postgres.Config{})
	fmt.Println(err)
	fmt.Println(store)
	// Output:
	// true
	// runlimit: invalid postgres store config: RowsPerShard is 100000, want 1 to 65536 (0 means 4096)
	// <nil>
	// postgres.Store{Schema: "public", RowsPerShard: 4096, MaxBatchSize: 32, AcquireTimeout: 3s, OperationTimeout: 3s}
}
