package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
)

// The capacity ledger's counts are the database's own bound: its triggers
// keep them exact and its CHECK refuses a shard's 65,537th row whoever
// inserts it. A service role holding the privileges the package documents
// admits, renews and cleans up, and takes the ledger's row locks, but
// cannot rewrite a count: a role that could set one back to 0 could keep
// inserting past every bound. It may not move a shard either.
func TestServiceRoleCannotForgeTheLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, postgres.Config{})
	svc := f.db.NewServiceRole(t, "public")
	pool := svc.NewPool(t, nil)
	store, err := postgres.New(pool, postgres.Config{})
	require.NoError(t, err)
	require.NoError(t, store.Ready(ctx))

	p := policy(t, "ledger.forge", 1, time.Hour)
	c := f.check(p, "subject")
	requireAllowed(t, admit(t, store, c))
	requireAllowed(t, admit(t, store, f.check(p, "a"), f.check(p, "b")))
	shard := postgres.ShardOf(c.CounterKey())
	require.Equal(t, int64(1), f.ledger(t, shard))

	for _, sql := range []string{
		`UPDATE public.runlimit_capacity_shards SET row_count = 0`,
		`UPDATE public.runlimit_capacity_shards SET row_count = row_count - 1 WHERE row_count > 0`,
	} {
		_, err := pool.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, sql)
		require.Equal(t, "42501", pgErr.Code, sql) // insufficient_privilege
	}
	_, err = pool.Exec(ctx, `UPDATE public.runlimit_capacity_shards SET capacity_shard = 255 - capacity_shard`)
	require.Error(t, err)
	require.Equal(t, int64(1), f.ledger(t, shard))

	// Cleanup still frees slots, through the triggers.
	shift(t, f.db.Pool, 2*time.Hour)
	removed, err := store.CleanupExpired(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 3, removed)
	require.Zero(t, f.ledger(t, shard))
}
