package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// fixture is a store on a manual clock, a limiter over it and a hasher.
type fixture struct {
	clock   *memory.ManualClock
	store   *memory.Store
	limiter *app.Limiter
	hasher  domain.KeyHasher
}

// setup builds a fixture from cfg. Unless cfg.Clock is set, the store runs
// on a fresh manual clock, the fixture's clock.
func setup(t *testing.T, cfg memory.Config) fixture {
	t.Helper()
	var clock *memory.ManualClock
	if cfg.Clock == nil {
		clock = memory.NewManualClock()
		cfg.Clock = clock
	}
	store, err := memory.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	// The limiter accepts any batch the store might: tests of the store's
	// own batch bound go around it.
	limiter, err := app.NewLimiter(store, app.LimiterConfig{MaxBatchSize: 1024})
	require.NoError(t, err)
	return fixture{clock: clock, store: store, limiter: limiter, hasher: newHasher(t)}
}

// testSecret is the key secret of every fixture's hasher: no word of it
// occurs in printed text, so leak tests can look for it.
var testSecret = []byte("Kq7#vZ2!mW9@pL4$xR8^tB1&yN6*cJ3%")

func newHasher(t testing.TB) domain.KeyHasher {
	t.Helper()
	hasher, err := domain.NewKeyHasher(testSecret)
	require.NoError(t, err)
	return hasher
}

func policy(limit int64, window time.Duration) domain.Policy {
	return domain.MustPolicy("test.memory", "subject", limit, window)
}

// check builds a cost-1 check of subject under p.
func (f fixture) check(p domain.Policy, subject string) domain.Check {
	return domain.NewCheck(p, f.hasher.KeyString(p, subject))
}

// onShard returns n checks of p with distinct subjects that land on shard.
func (f fixture) onShard(t *testing.T, p domain.Policy, shard, n int) []domain.Check {
	t.Helper()
	var out []domain.Check
	for _, s := range f.subjectsOnShard(t, p, shard, n) {
		out = append(out, f.check(p, s))
	}
	return out
}

// subjectsOnShard returns n distinct subjects whose checks of p land on
// shard.
func (f fixture) subjectsOnShard(t *testing.T, p domain.Policy, shard, n int) []string {
	t.Helper()
	var out []string
	for i := 0; len(out) < n; i++ {
		require.Less(t, i, 1_000_000, "no subject lands on shard %d", shard)
		s := fmt.Sprintf("shard-%d-subject-%d", shard, i)
		if f.store.ShardOf(f.check(p, s).CounterKey()) == shard {
			out = append(out, s)
		}
	}
	return out
}

// allow requires c to be allowed and returns its allowance.
func (f fixture) allow(t *testing.T, c domain.Check) domain.Allowance {
	t.Helper()
	d, err := f.limiter.Check(context.Background(), c)
	require.NoError(t, err)
	a, ok := d.Allowance()
	require.True(t, ok, "want allowed, got %v", d.Outcome())
	return a
}

// deny requires c to be denied for reason and returns its denial.
func (f fixture) deny(t *testing.T, c domain.Check, reason domain.DenialReason) domain.Denial {
	t.Helper()
	d, err := f.limiter.Check(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, domain.Denied, d.Outcome())
	den, ok := d.Denial()
	require.True(t, ok)
	require.Equal(t, reason, den.Reason())
	return den
}

// retry returns a denial's retry time, requiring one.
func retry(t *testing.T, d domain.Denial) time.Duration {
	t.Helper()
	r, ok := d.RetryAfter()
	require.True(t, ok, "denial has no retry time")
	return r
}

// stats returns the store's stats.
func (f fixture) stats(t *testing.T) memoryStats {
	t.Helper()
	st, err := f.store.Stats(context.Background())
	require.NoError(t, err)
	return memoryStats{Entries: st.Entries, Headroom: st.Headroom}
}

// memoryStats is the part of ports.Stats that changes as a store fills.
type memoryStats struct {
	Entries  int64
	Headroom []int64
}

// resets returns the reset times of an allowed batch, in caller order.
func resets(t *testing.T, bd domain.BatchDecision) []time.Duration {
	t.Helper()
	require.Equal(t, domain.Allowed, bd.Outcome())
	var out []time.Duration
	for _, d := range bd.Decisions() {
		a, ok := d.Allowance()
		require.True(t, ok)
		out = append(out, a.ResetAfter)
	}
	return out
}
