package memory

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// TestCorruptCountersFailClosedOnBothEntryPoints plants a counter no valid
// admission can store (more used than the policy's limit) and requires
// that a single check and a batch holding that key both fail closed,
// naming a corrupt counter, and change nothing: the detection is the
// domain's and runs in the one flow both entry points share.
func TestCorruptCountersFailClosedOnBothEntryPoints(t *testing.T) {
	t.Parallel()
	clock := NewManualClock()
	s, err := New(Config{MaxKeys: 8, Clock: clock})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("corrupt-counter-test-secret-32b!"))
	require.NoError(t, err)
	p := domain.MustPolicy("test.corrupt", "subject", 2, time.Minute)
	c := domain.NewCheck(p, hasher.KeyString(p, "subject"))
	other := domain.NewCheck(p, hasher.KeyString(p, "other"))
	key := c.CounterKey()
	corrupt := domain.Counter{Used: 3, Start: 0, Expires: 60_000_000}
	sh := &s.shards[s.shardOf(key)]
	sh.insert(&key, key.Hash64(), corrupt)

	requireCorrupt := func(err error) {
		t.Helper()
		require.ErrorIs(t, err, domain.ErrCorruptCounter)
		require.False(t, ports.MayHaveConsumedQuota(err))
		require.Equal(t, corrupt, sh.counter(must(sh.lookup(&key))), "the counter is untouched")
	}
	_, err = s.AdmitCheck(context.Background(), c)
	requireCorrupt(err)

	b, err := domain.NewBatch([]domain.Check{other, c}, 0)
	require.NoError(t, err)
	requireCorrupt(s.Admit(context.Background(), b))
	otherKey := other.CounterKey()
	_, held := sh.lookup(&otherKey)
	require.False(t, held, "a batch that failed stores none of its checks")
}
