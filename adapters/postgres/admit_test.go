package postgres_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

func TestAdmitCountsWindowAndDenies(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	p := policy(t, "auth.login", 2, time.Minute)
	c := f.check(p, "user@example.test")

	before := f.databaseNow(t)
	d := admit(t, f.store, c)
	requireAllowed(t, d)
	a, _ := d.Decisions()[0].Allowance()
	require.Equal(t, int64(2), a.Limit)
	require.Equal(t, int64(1), a.Remaining)
	require.Equal(t, time.Minute, a.ResetAfter)
	after := f.databaseNow(t)

	// The window is anchored at a database time sample taken during the
	// admission, and stored to the microsecond.
	got, ok := f.stored(t, c)
	require.True(t, ok)
	require.Equal(t, int64(1), got.Used)
	require.GreaterOrEqual(t, got.Start, before)
	require.LessOrEqual(t, got.Start, after)
	require.Equal(t, got.Start.Add(time.Minute), got.Expires)

	d = admit(t, f.store, c)
	requireAllowed(t, d)
	a, _ = d.Decisions()[0].Allowance()
	require.Zero(t, a.Remaining)
	require.Positive(t, a.ResetAfter)
	require.LessOrEqual(t, a.ResetAfter, time.Minute)

	d = admit(t, f.store, c)
	requireDenied(t, d, 0, domain.QuotaExhausted)
	_, denial, _ := d.Denied()
	retry, ok := denial.RetryAfter()
	require.True(t, ok)
	require.Positive(t, retry)
	require.LessOrEqual(t, retry, time.Minute)
	got, _ = f.stored(t, c)
	require.Equal(t, int64(2), got.Used, "a denial consumes nothing")
}

func TestAdmitRenewsExpiredWindowInPlace(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	p := policy(t, "renew", 1, time.Minute)
	c := f.check(p, "a")
	requireAllowed(t, admit(t, f.store, c))
	requireDenied(t, admit(t, f.store, c), 0, domain.QuotaExhausted)
	first, _ := f.stored(t, c)

	shift(t, f.db.Pool, time.Minute)
	requireAllowed(t, admit(t, f.store, c))
	got, _ := f.stored(t, c)
	require.Equal(t, int64(1), got.Used)
	require.Greater(t, got.Start, first.Start.Add(-time.Minute))
	require.Equal(t, int64(1), f.rowCount(t))
	require.Equal(t, int64(1), f.ledger(t, postgres.ShardOf(c.CounterKey())))
}

func TestAdmitBatchIsAtomic(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	p := policy(t, "atomic", 1, time.Hour)
	exhausted := f.check(p, "exhausted")
	fresh := f.check(p, "fresh")
	requireAllowed(t, admit(t, f.store, exhausted))

	requireDenied(t, admit(t, f.store, fresh, exhausted), 1, domain.QuotaExhausted)
	_, ok := f.stored(t, fresh)
	require.False(t, ok, "the fresh key of a denied batch must not be stored")
	require.Zero(t, f.ledger(t, postgres.ShardOf(fresh.CounterKey()))-
		boolInt(postgres.ShardOf(fresh.CounterKey()) == postgres.ShardOf(exhausted.CounterKey())))
	got, _ := f.stored(t, exhausted)
	require.Equal(t, int64(1), got.Used)

	// Allowed batches keep caller order and consume every check.
	q := policy(t, "atomic.many", 5, time.Hour)
	checks := []domain.Check{f.check(q, "x"), f.check(q, "y"), f.check(q, "z")}
	requireAllowed(t, admit(t, f.store, checks[2]))
	d := admit(t, f.store, checks...)
	requireAllowed(t, d)
	var remaining []int64
	for _, dec := range d.Decisions() {
		a, _ := dec.Allowance()
		remaining = append(remaining, a.Remaining)
	}
	require.Equal(t, []int64{4, 4, 3}, remaining)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func TestAdmitCostAndShadowMode(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	p := policy(t, "cost", 10, time.Hour)
	c, err := domain.NewCheckCost(p, f.hasher.KeyString(p, "s"), 7)
	require.NoError(t, err)
	requireAllowed(t, admit(t, f.store, c))
	requireDenied(t, admit(t, f.store, c), 0, domain.QuotaExhausted)

	shadow, err := p.WithMode(domain.Shadow)
	require.NoError(t, err)
	sc, err := domain.NewCheckCost(shadow, f.hasher.KeyString(shadow, "s"), 7)
	require.NoError(t, err)
	d := admit(t, f.store, sc)
	require.Equal(t, domain.ShadowDenied, d.Outcome())
	got, _ := f.stored(t, c)
	require.Equal(t, int64(7), got.Used, "shadow mode shares the counter and consumes nothing when denied")
}

// Two replicas, each with its own pool, race 48 checks on one key with
// limit 12: exactly 12 pass.
func TestAdmitExactAcrossReplicas(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	other, _ := f.newStore(t, postgres.Config{}, func(c *pgxpool.Config) { c.MaxConns = 8 })
	mine, _ := f.newStore(t, postgres.Config{}, func(c *pgxpool.Config) { c.MaxConns = 8 })
	p := policy(t, "replicas", 12, time.Hour)
	c := f.check(p, "attacker@example.test")

	var allowed, denied int
	for _, r := range raceReplicas([2]*postgres.Store{mine, other}, slices.Repeat([]domain.Check{c}, 48)) {
		require.NoError(t, r.err)
		switch r.d.Outcome() {
		case domain.Allowed:
			allowed++
		case domain.Denied:
			denied++
		}
	}
	require.Equal(t, 12, allowed)
	require.Equal(t, 36, denied)
	got, _ := f.stored(t, c)
	require.Equal(t, int64(12), got.Used)
}

type result struct {
	d   domain.BatchDecision
	err error
}

// raceReplicas admits every check at once from its own goroutine, even
// indexes through replicas[0] and odd ones through replicas[1], and returns
// the results for the test goroutine to assert on.
func raceReplicas(replicas [2]*postgres.Store, checks []domain.Check) []result {
	results := make(chan result, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		s := replicas[i%2]
		wg.Go(func() {
			d, err := tryAdmit(context.Background(), s, c)
			results <- result{d, err}
		})
	}
	wg.Wait()
	close(results)
	var all []result
	for r := range results {
		all = append(all, r)
	}
	return all
}

// 24 new keys race for one shard holding 4 rows: exactly 4 get a slot, and
// the ledger says so.
func TestAdmitCapacityIsExactUnderContention(t *testing.T) {
	t.Parallel()
	cfg := postgres.Config{RowsPerShard: 4}
	f := setup(t, cfg)
	other, _ := f.newStore(t, cfg, func(c *pgxpool.Config) { c.MaxConns = 8 })
	mine, _ := f.newStore(t, cfg, func(c *pgxpool.Config) { c.MaxConns = 8 })
	p := policy(t, "capacity", 5, time.Hour)
	const shard = 77
	checks := f.checksInShard(t, p, shard, 24)

	var allowed, full int
	for _, r := range raceReplicas([2]*postgres.Store{mine, other}, checks) {
		require.NoError(t, r.err)
		switch r.d.Outcome() {
		case domain.Allowed:
			allowed++
		case domain.Denied:
			_, denial, _ := r.d.Denied()
			require.Equal(t, domain.StorageCapacity, denial.Reason())
			_, hasRetry := denial.RetryAfter()
			require.False(t, hasRetry, "the store does not look up a full shard's earliest expiry")
			full++
		}
	}
	require.Equal(t, 4, allowed)
	require.Equal(t, 20, full)
	require.Equal(t, int64(4), f.ledger(t, shard))
	require.Equal(t, int64(4), f.rowCount(t))

	// A key that already has a row needs no slot.
	var kept domain.Check
	for _, c := range checks {
		if _, ok := f.stored(t, c); ok {
			kept = c
			break
		}
	}
	requireAllowed(t, admit(t, f.store, kept))
}

// New keys of one batch on one shard count against it in caller order.
func TestAdmitCapacityCountsBatchInCallerOrder(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{RowsPerShard: 3})
	p := policy(t, "capacity.batch", 5, time.Hour)
	five := f.checksInShard(t, p, 5, 4)
	six := f.checksInShard(t, p, 6, 2)
	requireAllowed(t, admit(t, f.store, five[0]))

	// Shard 5 holds one row: five[1] takes the second slot, five[2] the
	// third, five[0] renews in place.
	requireAllowed(t, admit(t, f.store, five[1], six[0], five[2], five[0]))
	require.Equal(t, int64(3), f.ledger(t, 5))
	requireDenied(t, admit(t, f.store, six[1], five[3]), 1, domain.StorageCapacity)
	_, ok := f.stored(t, six[1])
	require.False(t, ok)

	// Two new keys, one free slot: the second in caller order is denied,
	// and neither is stored.
	nine := f.checksInShard(t, p, 9, 4)
	requireAllowed(t, admit(t, f.store, nine[0]))
	requireAllowed(t, admit(t, f.store, nine[1]))
	requireDenied(t, admit(t, f.store, nine[3], nine[2]), 1, domain.StorageCapacity)
	require.Equal(t, int64(2), f.ledger(t, 9))
}

func TestAdmitRejectsBatchThatCanNeverFit(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{RowsPerShard: 2})
	p := policy(t, "overflow", 5, time.Hour)
	checks := f.checksInShard(t, p, 200, 3)
	b, err := domain.NewBatch(checks, 0)
	require.NoError(t, err)
	err = f.store.Admit(context.Background(), b)
	var overflow *postgres.ShardOverflowError
	require.ErrorAs(t, err, &overflow)
	require.Equal(t, postgres.ShardOverflowError{Shard: 200, Count: 3, Capacity: 2}, *overflow)
	require.ErrorIs(t, err, domain.ErrInvalidInput)
	require.False(t, ports.MayHaveConsumedQuota(err))
}

func TestAdmitRejectsBatchOverMaxSize(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{MaxBatchSize: 2})
	p := policy(t, "batch.size", 5, time.Hour)
	b, err := domain.NewBatch([]domain.Check{f.check(p, "a"), f.check(p, "b"), f.check(p, "c")}, 3)
	require.NoError(t, err)
	err = f.store.Admit(context.Background(), b)
	var be *domain.BatchError
	require.ErrorAs(t, err, &be)
	require.Equal(t, domain.BatchTooLarge, be.Problem)
	require.Equal(t, 2, be.Max)
	require.Zero(t, f.rowCount(t))
}

// Batches naming the same keys in opposite orders, from two replicas, never
// deadlock and count every admission.
func TestAdmitOppositeOrdersNeverDeadlock(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	other, _ := f.newStore(t, postgres.Config{}, func(c *pgxpool.Config) { c.MaxConns = 4 })
	mine, _ := f.newStore(t, postgres.Config{}, func(c *pgxpool.Config) { c.MaxConns = 4 })
	p := policy(t, "order", 1000, time.Hour)
	var forward, backward []domain.Check
	for i := range 8 {
		forward = append(forward, f.check(p, string(rune('a'+i))))
	}
	for i := range forward {
		backward = append(backward, forward[len(forward)-1-i])
	}

	const workers, rounds = 4, 10
	results := make(chan result, 2*workers*rounds)
	var wg sync.WaitGroup
	for w := range 2 * workers {
		s, checks := mine, forward
		if w%2 == 1 {
			s, checks = other, backward
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				d, err := tryAdmit(context.Background(), s, checks...)
				results <- result{d, err}
			}
		}()
	}
	wg.Wait()
	close(results)
	for r := range results {
		require.NoError(t, r.err)
		requireAllowed(t, r.d)
	}
	for _, c := range forward {
		got, _ := f.stored(t, c)
		require.Equal(t, int64(2*workers*rounds), got.Used)
	}
}
