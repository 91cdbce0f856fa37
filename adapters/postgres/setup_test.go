package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/ports"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fixture is one test's database, a store on it and a key hasher.
type fixture struct {
	db     *pgtest.Database
	store  *postgres.Store
	hasher domain.KeyHasher
}

func setup(t testing.TB, cfg postgres.Config) *fixture {
	t.Helper()
	db := pgtest.New(t)
	store, err := postgres.New(db.Pool, cfg)
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("runlimit postgres store tests, 32+ bytes of secret"))
	require.NoError(t, err)
	return &fixture{db: db, store: store, hasher: hasher}
}

// newStore opens another store on the fixture's database through a pool of
// its own: another replica.
func (f *fixture) newStore(t testing.TB, cfg postgres.Config, configure func(*pgxpool.Config)) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	pool := f.db.NewPool(t, configure)
	store, err := postgres.New(pool, cfg)
	require.NoError(t, err)
	return store, pool
}

func policy(t testing.TB, id string, limit int64, window time.Duration) domain.Policy {
	t.Helper()
	pid, err := domain.NewPolicyID(id)
	require.NoError(t, err)
	scope, err := domain.NewScopeID("subject")
	require.NoError(t, err)
	p, err := domain.NewPolicy(pid, scope, limit, window)
	require.NoError(t, err)
	return p
}

func (f *fixture) check(p domain.Policy, subject string) domain.Check {
	return domain.NewCheck(p, f.hasher.KeyString(p, subject))
}

// checksInShard returns n checks of p whose counters fall on shard.
func (f *fixture) checksInShard(t *testing.T, p domain.Policy, shard, n int) []domain.Check {
	t.Helper()
	var out []domain.Check
	for i := 0; len(out) < n; i++ {
		require.Less(t, i, 1_000_000, "no subjects found for shard %d", shard)
		c := f.check(p, fmt.Sprintf("subject-%d", i))
		if postgres.ShardOf(c.CounterKey()) == shard {
			out = append(out, c)
		}
	}
	return out
}

// tryAdmit runs one batch and returns its decision; it is safe to call from
// any goroutine.
func tryAdmit(ctx context.Context, s ports.Store, checks ...domain.Check) (domain.BatchDecision, error) {
	b, err := domain.NewBatch(checks, 0)
	if err != nil {
		return domain.BatchDecision{}, err
	}
	if err := s.Admit(ctx, b); err != nil {
		return domain.BatchDecision{}, err
	}
	d, err := b.Decision()
	return d.Clone(), err
}

func admit(t *testing.T, s ports.Store, checks ...domain.Check) domain.BatchDecision {
	t.Helper()
	d, err := tryAdmit(context.Background(), s, checks...)
	require.NoError(t, err)
	return d
}

// stored reads check's counter straight from the table.
func (f *fixture) stored(t *testing.T, c domain.Check) (domain.Counter, bool) {
	t.Helper()
	k := c.CounterKey().Bytes()
	var used int64
	var start, expires time.Time
	err := f.db.Pool.QueryRow(context.Background(),
		`SELECT used, window_started_at, window_expires_at FROM runlimit_fixed_windows
		 WHERE config_fingerprint = $1 AND subject_key = $2`, k[:32], k[32:]).Scan(&used, &start, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Counter{}, false
	}
	require.NoError(t, err)
	return domain.Counter{Used: used, Start: domain.InstantFromTime(start), Expires: domain.InstantFromTime(expires)}, true
}

// ledger returns the capacity ledger's count for shard, and checks that it
// matches the table.
func (f *fixture) ledger(t *testing.T, shard int) int64 {
	t.Helper()
	var ledger, actual int64
	require.NoError(t, f.db.Pool.QueryRow(context.Background(),
		`SELECT c.row_count, (SELECT count(*) FROM runlimit_fixed_windows AS w
		   WHERE (get_byte(w.config_fingerprint, 0) # get_byte(w.subject_key, 0)) = c.capacity_shard)
		 FROM runlimit_capacity_shards AS c WHERE c.capacity_shard = $1`, shard).Scan(&ledger, &actual))
	require.Equal(t, actual, ledger, "ledger of shard %d disagrees with the table", shard)
	return ledger
}

func (f *fixture) rowCount(t *testing.T) int64 {
	t.Helper()
	var n int64
	require.NoError(t, f.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM runlimit_fixed_windows").Scan(&n))
	return n
}

// shift moves every stored window d into the past: the store's way of
// letting time pass without production test hooks or sleeping.
func shift(t testing.TB, pool *pgxpool.Pool, d time.Duration) {
	t.Helper()
	_, err := pool.Exec(context.Background(),
		`UPDATE runlimit_fixed_windows
		 SET window_started_at = window_started_at - $1::interval,
		     window_expires_at = window_expires_at - $1::interval`, d)
	require.NoError(t, err)
}

func requireAllowed(t *testing.T, d domain.BatchDecision) {
	t.Helper()
	require.Equal(t, domain.Allowed, d.Outcome())
}

func requireDenied(t *testing.T, d domain.BatchDecision, index int, reason domain.DenialReason) {
	t.Helper()
	require.Equal(t, domain.Denied, d.Outcome())
	i, denial, ok := d.Denied()
	require.True(t, ok)
	require.Equal(t, index, i)
	require.Equal(t, reason, denial.Reason())
}

// databaseNow samples the database clock.
func (f *fixture) databaseNow(t *testing.T) domain.Instant {
	t.Helper()
	var now time.Time
	require.NoError(t, f.db.Pool.QueryRow(context.Background(), "SELECT pg_catalog.clock_timestamp()").Scan(&now))
	return domain.InstantFromTime(now)
}

// warmFor makes the one connection of pool, a pool of one, ready for
// store's admissions through a store with the default budgets, which
// making a connection ready (a new server process, its statements
// prepared) stays within however slow a loaded machine makes it. store,
// whose budget may be a few hundred milliseconds, then only acquires a
// warm connection: its budget bounds the step under test, not the
// warm-up.
func warmFor(t testing.TB, store *postgres.Store, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	require.EqualValues(t, 1, pool.Config().MaxConns, "warmFor warms a pool of one")
	warm, err := postgres.New(pool, postgres.Config{})
	require.NoError(t, err)
	require.NoError(t, warm.Ready(ctx))
	require.NoError(t, warm.Close())
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	require.True(t, store.IsWarm(conn), "the store under test finds the connection cold")
}
