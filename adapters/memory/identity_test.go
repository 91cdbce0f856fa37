package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
)

// Policies built apart from one identity share their subjects' counters on
// every path, and a batch naming one subject under both is a duplicate
// that never reaches the store. Were it let through, the store would lock
// the key's entry twice and hang with its shard locked: this test would
// then fail by its timeout.
func TestEqualPoliciesBuiltApartShareOneCounter(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 8, Shards: 2})
	ctx := context.Background()
	p, twin := policy(3, time.Minute), policy(3, time.Minute)
	require.False(t, p == twin, "built apart")
	c := f.check(p, "subject")
	cTwin := f.check(twin, "subject")

	require.Equal(t, int64(2), f.allow(t, c).Remaining)
	require.Equal(t, int64(1), f.allow(t, cTwin).Remaining, "the twin's check counts in the same window")

	_, err := f.limiter.CheckAll(ctx, []domain.Check{c, cTwin})
	var be *domain.BatchError
	require.ErrorAs(t, err, &be)
	require.Equal(t, domain.BatchDuplicateKey, be.Problem)

	b, err := domain.NewBatch([]domain.Check{cTwin}, 1)
	require.NoError(t, err)
	require.NoError(t, f.store.Admit(ctx, b))
	d, _, err := b.DecisionOf(0)
	require.NoError(t, err)
	a, ok := d.Allowance()
	require.True(t, ok)
	require.Equal(t, int64(0), a.Remaining)
	f.deny(t, c, domain.QuotaExhausted)
	require.Equal(t, int64(1), f.stats(t).Entries)
}
