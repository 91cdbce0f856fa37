package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

func admitCheck(t *testing.T, s *postgres.Store, c domain.Check) domain.Decision {
	t.Helper()
	d, err := s.AdmitCheck(context.Background(), c)
	require.NoError(t, err)
	return d
}

// AdmitCheck counts, renews, denies and shares its counter with Admit.
func TestAdmitCheckCountsWindowAndDenies(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	p := policy(t, "single", 3, time.Minute)
	c := f.check(p, "user@example.test")

	before := f.databaseNow(t)
	d := admitCheck(t, f.store, c)
	require.Equal(t, domain.Allowed, d.Outcome())
	a, _ := d.Allowance()
	require.Equal(t, domain.Allowance{Limit: 3, Remaining: 2, ResetAfter: time.Minute}, a)
	after := f.databaseNow(t)
	got, ok := f.stored(t, c)
	require.True(t, ok)
	require.Equal(t, int64(1), got.Used)
	require.GreaterOrEqual(t, got.Start, before)
	require.LessOrEqual(t, got.Start, after)
	require.Equal(t, got.Start.Add(time.Minute), got.Expires)
	require.Equal(t, int64(1), f.ledger(t, postgres.ShardOf(c.CounterKey())))

	// A batch of one sees the single check's unit, and the reverse.
	requireAllowed(t, admit(t, f.store, c))
	d = admitCheck(t, f.store, c)
	a, _ = d.Allowance()
	require.Zero(t, a.Remaining)
	require.Positive(t, a.ResetAfter)
	require.LessOrEqual(t, a.ResetAfter, time.Minute)

	d = admitCheck(t, f.store, c)
	require.Equal(t, domain.Denied, d.Outcome())
	denial, _ := d.Denial()
	require.Equal(t, domain.QuotaExhausted, denial.Reason())
	retry, ok := denial.RetryAfter()
	require.True(t, ok)
	require.Positive(t, retry)
	require.LessOrEqual(t, retry, time.Minute)
	got, _ = f.stored(t, c)
	require.Equal(t, int64(3), got.Used, "a denial consumes nothing")

	// An expired window renews in place, without a new slot.
	shift(t, f.db.Pool, time.Minute)
	d = admitCheck(t, f.store, c)
	require.Equal(t, domain.Allowed, d.Outcome())
	got, _ = f.stored(t, c)
	require.Equal(t, int64(1), got.Used)
	require.Equal(t, int64(1), f.rowCount(t))
	require.Equal(t, int64(1), f.ledger(t, postgres.ShardOf(c.CounterKey())))
}

func TestAdmitCheckShadowModeAndCost(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	p := policy(t, "single.cost", 10, time.Hour)
	c, err := domain.NewCheckCost(p, f.hasher.KeyString(p, "s"), 7)
	require.NoError(t, err)
	require.Equal(t, domain.Allowed, admitCheck(t, f.store, c).Outcome())

	shadow, err := p.WithMode(domain.Shadow)
	require.NoError(t, err)
	sc, err := domain.NewCheckCost(shadow, f.hasher.KeyString(shadow, "s"), 7)
	require.NoError(t, err)
	d := admitCheck(t, f.store, sc)
	require.Equal(t, domain.ShadowDenied, d.Outcome())
	require.True(t, d.PermitsRequest())
	got, _ := f.stored(t, c)
	require.Equal(t, int64(7), got.Used, "a shadow denial consumes nothing")
}

// A new key on a full shard is denied for capacity, without a retry time;
// a key with a row renews without a slot.
func TestAdmitCheckCapacity(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{RowsPerShard: 2})
	p := policy(t, "single.capacity", 5, time.Hour)
	const shard = 31
	checks := f.checksInShard(t, p, shard, 3)
	require.Equal(t, domain.Allowed, admitCheck(t, f.store, checks[0]).Outcome())
	require.Equal(t, domain.Allowed, admitCheck(t, f.store, checks[1]).Outcome())

	d := admitCheck(t, f.store, checks[2])
	require.Equal(t, domain.Denied, d.Outcome())
	denial, _ := d.Denial()
	require.Equal(t, domain.StorageCapacity, denial.Reason())
	_, hasRetry := denial.RetryAfter()
	require.False(t, hasRetry)
	_, ok := f.stored(t, checks[2])
	require.False(t, ok)
	require.Equal(t, int64(2), f.ledger(t, shard))
	require.Equal(t, domain.Allowed, admitCheck(t, f.store, checks[0]).Outcome())
}

// An invalid check is rejected before a connection is taken.
func TestAdmitCheckRejectsInvalidCheckWithoutTouchingTheDatabase(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	_, err := f.store.AdmitCheck(context.Background(), domain.Check{})
	require.ErrorIs(t, err, domain.ErrInvalidInput)
	require.Zero(t, f.db.Pool.Stat().AcquireCount())
}
