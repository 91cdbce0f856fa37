package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
)

// TestALedgerCountTheSchemaForbidsFailsEveryRead: a ledger row whose
// count is below 0 or above the hard maximum, which only a damaged schema
// holds (its constraints dropped), fails an admission on its shard closed
// with ErrLedger, as ErrLedger's documentation says. Stats and Ready read
// the same ledger and took such a count as a count: Stats reported more
// headroom than the shard has capacity (a negative count) and Ready
// reported the store ready while every admission on the shard failed.
func TestALedgerCountTheSchemaForbidsFailsEveryRead(t *testing.T) {
	t.Parallel()
	for name, count := range map[string]int64{"negative": -5, "above the hard maximum": postgres.MaxRowsPerShard + 1} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, postgres.Config{})
			ctx := context.Background()
			c := f.check(policy(t, "ledger.damaged", 5, time.Hour), name)
			shard := postgres.ShardOf(c.CounterKey())
			for _, stmt := range []string{
				`ALTER TABLE runlimit_capacity_shards DROP CONSTRAINT runlimit_capacity_shards_nonnegative_count`,
				`ALTER TABLE runlimit_capacity_shards DROP CONSTRAINT runlimit_capacity_shards_hard_max`,
			} {
				_, err := f.db.Pool.Exec(ctx, stmt)
				require.NoError(t, err)
			}
			_, err := f.db.Pool.Exec(ctx, `UPDATE runlimit_capacity_shards SET row_count = $1 WHERE capacity_shard = $2`, count, shard)
			require.NoError(t, err)

			_, err = f.store.AdmitCheck(ctx, c)
			require.ErrorIs(t, err, postgres.ErrLedger)
			_, err = f.store.Stats(ctx)
			require.ErrorIs(t, err, postgres.ErrLedger)
			_, err = f.store.TableStats(ctx)
			require.ErrorIs(t, err, postgres.ErrLedger)
			require.ErrorIs(t, f.store.Ready(ctx), postgres.ErrLedger)
		})
	}
}
