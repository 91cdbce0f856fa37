package postgres_test

import (
	"context"
	"fmt"
	"sync"
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

// Under a role whose default isolation is serializable, the optimistic
// protocol's implicit transactions take that level, and the server's
// serialization checks abort some of its reads and writes, a write's even
// at its COMMIT, when concurrent checks touch neighbouring rows. Each such
// abort committed nothing and is a conflict like any other: the check
// starts again, then falls back to the locked protocol. Concurrent checks
// of one hot key and of many new keys therefore all get decisions, none an
// error claiming that quota may have been consumed, and the table holds
// exactly what was allowed.
func TestSerializableDefaultIsolationUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, postgres.Config{})
	svc := f.db.NewServiceRole(t, "public")
	f.db.SetRoleSetting(t, svc, "default_transaction_isolation", "serializable")
	pool := svc.NewPool(t, func(c *pgxpool.Config) { c.MaxConns = 8 })
	store, err := postgres.New(pool, postgres.Config{Protocol: postgres.Optimistic})
	require.NoError(t, err)
	var got string
	require.NoError(t, pool.QueryRow(ctx, "SHOW default_transaction_isolation").Scan(&got))
	require.Equal(t, "serializable", got)

	const (
		callers  = 8
		each     = 90
		hotLimit = 40
	)
	hot := f.check(policy(t, "serializable.hot", hotLimit, time.Hour), "hot")
	cold := policy(t, "serializable.cold", 1000, time.Hour)
	type result struct {
		hot, allowed bool
		err          error
	}
	results := make(chan result, callers*each)
	var wg sync.WaitGroup
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				c, isHot := f.check(cold, fmt.Sprintf("cold-%d-%d", g, i)), i%3 == 0
				if isHot {
					c = hot
				}
				d, err := store.AdmitCheck(ctx, c)
				results <- result{hot: isHot, allowed: err == nil && d.PermitsRequest(), err: err}
			}
		}()
	}
	wg.Wait()
	close(results)
	var hotAllowed, coldAllowed int64
	for r := range results {
		require.NoError(t, r.err)
		switch {
		case r.hot && r.allowed:
			hotAllowed++
		case r.allowed:
			coldAllowed++
		}
	}
	require.Equal(t, int64(hotLimit), hotAllowed)
	require.Equal(t, int64(callers*each*2/3), coldAllowed)
	f.requireUsed(t, []domain.Check{hot}, hotLimit)
	var stored int64
	require.NoError(t, f.db.Pool.QueryRow(ctx, "SELECT sum(used) FROM runlimit_fixed_windows").Scan(&stored))
	require.Equal(t, hotAllowed+coldAllowed, stored)
}
