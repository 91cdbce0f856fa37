package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// A batch of one is reused by ResetSingle as a batch of several is by
// Reset: after a store drove it, it is ready again, and the next store's
// observation is the one evaluated.
func TestResetSingleReusesADrivenBatch(t *testing.T) {
	t.Parallel()
	f := setup(t) // 5 per second
	c := f.check("a")
	var b domain.Batch
	require.NoError(t, b.ResetSingle(&c))
	b.Observe(0, domain.Observation{})
	commit, err := b.Evaluate(ms(1))
	require.NoError(t, err)
	require.True(t, commit)

	require.NoError(t, b.ResetSingle(&c))
	require.NoError(t, b.Ready())
	b.Observe(0, domain.Observation{Counter: domain.Counter{Used: 5, Start: ms(1), Expires: ms(1001)}})
	commit, err = b.Evaluate(ms(2))
	require.NoError(t, err, "the second store's observation counts")
	require.False(t, commit)
	d, ok, err := b.DecisionOf(0)
	require.NoError(t, err)
	require.True(t, ok)
	requireDenied(t, d, domain.Denied, domain.QuotaExhausted, 999*time.Millisecond, true)

	// And from a batch of several back to one.
	require.NoError(t, b.Reset([]domain.Check{f.check("b"), f.check("c")}, 0))
	for i := range 2 {
		b.Observe(i, domain.Observation{})
	}
	_, err = b.Evaluate(ms(3))
	require.NoError(t, err)
	require.NoError(t, b.ResetSingle(&c))
	b.Observe(0, domain.Observation{})
	commit, err = b.Evaluate(ms(4))
	require.NoError(t, err)
	require.True(t, commit)
}
