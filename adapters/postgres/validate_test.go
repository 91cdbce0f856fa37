package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// Every entry point rejects a caller's mistake before anything else, and
// reports it as one: an open, a closed store and a done context all give
// the same invalid-input error, no connection is taken, nothing panics.
func TestInvalidInputIsRejectedFirst(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{RowsPerShard: 1})
	p := policy(t, "invalid", 5, time.Hour)
	// Two keys on shards of their own: each shard holds one row.
	pair := append(f.checksInShard(t, p, 1, 1), f.checksInShard(t, p, 2, 1)...)

	driven, err := domain.NewBatch(pair, 0)
	require.NoError(t, err)
	require.NoError(t, f.store.Admit(context.Background(), driven))
	overflow := f.checksInShard(t, p, 7, 2) // two new keys on a shard of one row
	tooLarge := make([]domain.Check, 33)
	for i := range tooLarge {
		tooLarge[i] = f.check(p, string(rune('a'+i)))
	}
	batches := map[string]func(t *testing.T) *domain.Batch{
		"nil":         func(*testing.T) *domain.Batch { return nil },
		"never reset": func(*testing.T) *domain.Batch { return new(domain.Batch) },
		"shard overflow": func(t *testing.T) *domain.Batch {
			b, err := domain.NewBatch(overflow, 0)
			require.NoError(t, err)
			return b
		},
		"too large": func(t *testing.T) *domain.Batch {
			b, err := domain.NewBatch(tooLarge, 64)
			require.NoError(t, err)
			return b
		},
	}
	checks := map[string]domain.Check{
		"zero check":  {},
		"zero policy": domain.NewCheck(domain.Policy{}, f.hasher.KeyString(p, "x")),
		"zero key":    domain.NewCheck(p, domain.SubjectKey{}),
	}

	closed, closedPool := f.newStore(t, postgres.Config{RowsPerShard: 1}, nil)
	require.NoError(t, closed.Close())
	done, cancel := context.WithCancel(context.Background())
	cancel()
	// The subtests count the pools' acquisitions: they run one at a time.
	for _, env := range []struct {
		name  string
		store *postgres.Store
		pool  *pgxpool.Pool
		ctx   context.Context
	}{
		{"open store", f.store, f.db.Pool, context.Background()},
		{"closed store", closed, closedPool, context.Background()},
		{"done context", f.store, f.db.Pool, done},
	} {
		for name, batch := range batches {
			t.Run(env.name+"/batch/"+name, func(t *testing.T) {
				before := env.pool.Stat().AcquireCount()
				var err error
				require.NotPanics(t, func() { err = env.store.Admit(env.ctx, batch(t)) })
				require.ErrorIs(t, err, domain.ErrInvalidInput)
				require.False(t, ports.MayHaveConsumedQuota(err))
				require.Equal(t, before, env.pool.Stat().AcquireCount(), "a connection was taken")
			})
		}
		t.Run(env.name+"/batch/already driven", func(t *testing.T) {
			before := env.pool.Stat().AcquireCount()
			require.ErrorIs(t, env.store.Admit(env.ctx, driven), domain.ErrBatchProtocol)
			require.Equal(t, before, env.pool.Stat().AcquireCount(), "a connection was taken")
		})
		for name, c := range checks {
			t.Run(env.name+"/check/"+name, func(t *testing.T) {
				before := env.pool.Stat().AcquireCount()
				_, err := env.store.AdmitCheck(env.ctx, c)
				require.ErrorIs(t, err, domain.ErrInvalidInput)
				require.False(t, ports.MayHaveConsumedQuota(err))
				require.Equal(t, before, env.pool.Stat().AcquireCount(), "a connection was taken")
			})
		}
		t.Run(env.name+"/cleanup/negative maximum", func(t *testing.T) {
			before := env.pool.Stat().AcquireCount()
			_, err := env.store.CleanupExpired(env.ctx, -1)
			require.ErrorIs(t, err, domain.ErrInvalidInput)
			require.ErrorIs(t, err, postgres.ErrNegativeMax)
			require.Equal(t, before, env.pool.Stat().AcquireCount(), "a connection was taken")
		})
	}
	require.Zero(t, f.rowCount(t)-2, "only the driven batch's two counters are stored")
}
