package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

// A database or role whose default isolation is stricter than read
// committed (ALTER DATABASE ... SET default_transaction_isolation), or a
// pool that sets one, is served as any other: the store's transactions set
// read committed themselves, and its optimistic statements are single
// statements or treat the serialization failures of a stricter level as
// conflicts. Both modes admit single checks of new and stored keys and
// batches, and cleanup and stats work.
func TestStricterDefaultIsolation(t *testing.T) {
	t.Parallel()
	for _, level := range []string{"repeatable read", "serializable"} {
		for _, protocol := range []postgres.Protocol{postgres.Locked, postgres.Optimistic} {
			t.Run(level+"/"+protocol.String(), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				f := setup(t, postgres.Config{})
				store, pool := f.newStore(t, postgres.Config{Protocol: protocol}, func(c *pgxpool.Config) {
					c.ConnConfig.RuntimeParams["default_transaction_isolation"] = level
				})
				var got string
				require.NoError(t, pool.QueryRow(ctx, "SHOW transaction_isolation").Scan(&got))
				require.Equal(t, level, got)

				p := policy(t, "isolation", 2, time.Hour)
				c, a, b := f.check(p, "c"), f.check(p, "a"), f.check(p, "b")
				for range 2 {
					d, err := store.AdmitCheck(ctx, c)
					require.NoError(t, err)
					require.Equal(t, domain.Allowed, d.Outcome())
				}
				d, err := store.AdmitCheck(ctx, c)
				require.NoError(t, err)
				require.Equal(t, domain.Denied, d.Outcome())
				requireAllowed(t, admit(t, store, a, b))
				requireAllowed(t, admit(t, store, b, a))
				requireDenied(t, admit(t, store, a, b), 0, domain.QuotaExhausted)
				f.requireUsed(t, []domain.Check{c, a, b}, 2)

				st, err := store.Stats(ctx)
				require.NoError(t, err)
				require.Equal(t, int64(3), st.Entries)
				shift(t, f.db.Pool, 2*time.Hour)
				removed, err := store.CleanupExpired(ctx, 10)
				require.NoError(t, err)
				require.Equal(t, 3, removed)
				require.Zero(t, f.rowCount(t))
			})
		}
	}
}
