package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
)

// A schema as a Rust Runlimit service leaves it (written from SPEC's
// facts, with trigger functions of its own), once adopted, is served by
// the store as its own schema is: single checks and batches, quota and
// capacity denials, cleanup and stats, with the ledger exact throughout.
func TestServesAnAdoptedRustSchema(t *testing.T) {
	t.Parallel()
	for _, run := range []struct {
		schema   string
		protocol postgres.Protocol
	}{{"public", postgres.Locked}, {"shared_limits", postgres.Locked}, {"shared_limits", postgres.Optimistic}} {
		schema := run.schema
		t.Run(schema+"/"+run.protocol.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := pgtest.NewEmpty(t)
			db.MigrateAsRust(t, schema)
			require.NoError(t, migrations.MigratePool(ctx, db.Pool, schema))
			store, err := postgres.New(db.Pool, postgres.Config{Schema: schema, RowsPerShard: 2, Protocol: run.protocol})
			require.NoError(t, err)
			hasher, err := domain.NewKeyHasher([]byte("runlimit postgres store tests, 32+ bytes of secret"))
			require.NoError(t, err)
			// The test's own queries find the schema's tables unqualified.
			own := *db
			own.Pool = db.NewPool(t, func(c *pgxpool.Config) { c.ConnConfig.RuntimeParams["search_path"] = schema })
			f := &fixture{db: &own, store: store, hasher: hasher}

			p := policy(t, "rust.shared", 2, time.Minute)
			const shard = 77
			checks := f.checksInShard(t, p, shard, 3)
			// Single checks take the store's protocol; batches are locked.
			single, batch := entries[0], entries[1]
			single.allow(t, store, checks[:1])
			batch.allow(t, store, checks[:2])
			f.requireUsed(t, checks[:1], 2)
			f.requireUsed(t, checks[1:2], 1)
			require.Equal(t, int64(2), f.ledger(t, shard))

			r, err := single.admit(ctx, store, checks[:1])
			require.NoError(t, err)
			require.Equal(t, verdict{outcome: domain.Denied, reason: domain.QuotaExhausted}, r)
			r, err = batch.admit(ctx, store, checks[1:3])
			require.NoError(t, err)
			require.Equal(t, verdict{outcome: domain.Denied, index: 1, reason: domain.StorageCapacity}, r,
				"the shard's two rows are taken: a third key is denied")
			f.requireUsed(t, checks[1:2], 1)
			f.requireAbsent(t, checks[2:])

			stats, err := store.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, int64(2), stats.Entries)
			require.Equal(t, int64(0), stats.Headroom[shard])

			shift(t, f.db.Pool, time.Minute)
			removed, err := store.CleanupExpired(ctx, 10)
			require.NoError(t, err)
			require.Equal(t, 2, removed)
			require.Zero(t, f.ledger(t, shard))
			single.allow(t, store, checks[2:])
			require.Equal(t, int64(1), f.ledger(t, shard))

			ts, err := store.TableStats(ctx)
			require.NoError(t, err)
			require.Equal(t, int64(1), ts.Rows)
			require.Equal(t, postgres.ShardUsage{Shard: shard, Rows: 1, Headroom: 1}, ts.Fullest[0])
		})
	}
}
