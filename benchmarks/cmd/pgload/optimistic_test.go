package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

var testHasher = func() domain.KeyHasher {
	h, err := domain.NewKeyHasher([]byte("pgload tests: a fixed secret of 32+ bytes"))
	if err != nil {
		panic(err)
	}
	return h
}()

// setupOptimistic returns a pool of conns connections on a database of its
// own, made as pgload makes one on the server of
// $RUNLIMIT_POSTGRES_TEST_DATABASE_URL or the local one and dropped when the
// test ends, and an optimistic contender on it with rowsPerShard slots per
// shard.
func setupOptimistic(t *testing.T, conns int32, rowsPerShard int64) (*pgxpool.Pool, *optimistic) {
	t.Helper()
	ctx := context.Background()
	_, dbURL, drop, err := createDatabase(ctx, defaultURL())
	require.NoError(t, err, "the test needs a PostgreSQL server that lets it create databases")
	t.Cleanup(drop)
	cfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	cfg.MaxConns = conns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, newOptimistic(pool, nil, rowsPerShard)
}

// admitAll runs each check from a goroutine of its own and returns the
// decisions and errors in check order.
func admitAll(o *optimistic, checks []domain.Check) ([]domain.Decision, []error) {
	ds := make([]domain.Decision, len(checks))
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i := range checks {
		wg.Go(func() { ds[i], errs[i] = o.admit(context.Background(), &checks[i]) })
	}
	wg.Wait()
	return ds, errs
}

func storedUsed(t *testing.T, pool *pgxpool.Pool, c domain.Check) int64 {
	t.Helper()
	kb := c.CounterKey().Bytes()
	var used int64
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT used FROM runlimit_fixed_windows WHERE config_fingerprint = $1 AND subject_key = $2`,
		kb[:32], kb[32:]).Scan(&used))
	return used
}

// Callers racing on one key get exactly the limit between them, and the
// stored counter counts exactly the allowed checks: a conflicting write is
// retried, never applied over another.
func TestOptimisticNeverOverAdmits(t *testing.T) {
	t.Parallel()
	const limit, callers, attempts = 25, 8, 12
	pool, o := setupOptimistic(t, callers, postgres.DefaultRowsPerShard)
	p := domain.MustPolicy("pgload.test.race", "caller", limit, time.Hour)
	check := domain.NewCheck(p, testHasher.KeyString(p, "hot"))

	checks := make([]domain.Check, callers*attempts)
	for i := range checks {
		checks[i] = check
	}
	ds, errs := admitAll(o, checks)
	allowed, denied := 0, 0
	for i := range ds {
		require.NoError(t, errs[i])
		switch ds[i].Outcome() {
		case domain.Allowed:
			allowed++
		case domain.Denied:
			dn, _ := ds[i].Denial()
			require.Equal(t, domain.QuotaExhausted, dn.Reason())
			denied++
		}
	}
	require.Equal(t, limit, allowed)
	require.Equal(t, len(checks)-limit, denied)
	require.Equal(t, int64(limit), storedUsed(t, pool, check))
	t.Logf("%d conflicts retried", o.retries.Load())
}

// New keys racing for the last slots of one capacity shard get exactly the
// shard's bound, and the ledger's trigger counts each of them.
func TestOptimisticRespectsShardCapacity(t *testing.T) {
	t.Parallel()
	const bound, racers = 3, 12
	pool, o := setupOptimistic(t, racers, bound)
	p := domain.MustPolicy("pgload.test.capacity", "caller", 10, time.Hour)

	// Subjects whose keys share one shard.
	var checks []domain.Check
	shard := -1
	for i := 0; len(checks) < racers; i++ {
		c := domain.NewCheck(p, testHasher.KeyString(p, fmt.Sprintf("subject-%d", i)))
		if s := postgres.ShardOf(c.CounterKey()); shard < 0 || s == shard {
			shard = s
			checks = append(checks, c)
		}
	}
	ds, errs := admitAll(o, checks)
	allowed := 0
	for i := range ds {
		require.NoError(t, errs[i])
		if ds[i].Outcome() == domain.Allowed {
			allowed++
			continue
		}
		dn, ok := ds[i].Denial()
		require.True(t, ok)
		require.Equal(t, domain.StorageCapacity, dn.Reason())
	}
	require.Equal(t, bound, allowed)

	var rows, ledger int64
	ctx := context.Background()
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM runlimit_fixed_windows WHERE policy_id = $1`, p.ID().String()).Scan(&rows))
	require.NoError(t, pool.QueryRow(ctx, `SELECT row_count FROM runlimit_capacity_shards WHERE capacity_shard = $1`, shard).Scan(&ledger))
	require.Equal(t, int64(bound), rows)
	require.Equal(t, int64(bound), ledger, "the ledger's trigger counts every inserted key")
}

// The conditional write runs under the statement and lock timeouts taken
// from the budget: blocked by a row lock, it fails on the server's lock
// timeout before the client's deadline, consumes nothing, and the
// connection stays usable.
func TestOptimisticWriteWaitsWithinItsBudget(t *testing.T) {
	t.Parallel()
	pool, o := setupOptimistic(t, 2, postgres.DefaultRowsPerShard)
	o.timeout = time.Second
	p := domain.MustPolicy("pgload.test.timeout", "caller", 10, time.Hour)
	check := domain.NewCheck(p, testHasher.KeyString(p, "locked"))
	ctx := context.Background()
	d, err := o.admit(ctx, &check)
	require.NoError(t, err)
	require.Equal(t, domain.Allowed, d.Outcome())

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	kb := check.CounterKey().Bytes()
	_, err = tx.Exec(ctx, `SELECT 1 FROM runlimit_fixed_windows WHERE config_fingerprint = $1 AND subject_key = $2 FOR UPDATE`, kb[:32], kb[32:])
	require.NoError(t, err)
	_, err = o.admit(ctx, &check)
	require.NoError(t, tx.Rollback(ctx))

	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "want the server's error, got %v", err)
	// Both timeouts take the same value; the statement's started first.
	serverTimeout := pgErr.Code == "55P03" || (pgErr.Code == "57014" && strings.Contains(pgErr.Message, "statement timeout"))
	require.True(t, serverTimeout, "want the server's lock or statement timeout, got %s: %s", pgErr.Code, pgErr.Message)
	require.Equal(t, int64(1), storedUsed(t, pool, check), "the failed check consumed nothing")

	d, err = o.admit(ctx, &check)
	require.NoError(t, err)
	require.Equal(t, domain.Allowed, d.Outcome())
	require.Equal(t, int64(2), storedUsed(t, pool, check))
}
