package domain_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// TestEvaluateCheckMatchesBatchOfOne drives the same random inputs through
// EvaluateCheck and a batch of one: stores may offer either path, so they
// must decide and persist identically.
func TestEvaluateCheckMatchesBatchOfOne(t *testing.T) {
	t.Parallel()

	hasher, err := domain.NewKeyHasher([]byte("single-check-test-secret-32bytes"))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		limit := 1 + rng.Int64N(10)
		window := time.Duration(1+rng.Int64N(1000)) * time.Millisecond
		p := domain.MustPolicy("single", "check", limit, window)
		if rng.IntN(2) == 0 {
			p, err = p.WithMode(domain.Shadow)
			require.NoError(t, err)
		}
		c, err := domain.NewCheckCost(p, hasher.KeyString(p, "subject"), 1+rng.Int64N(limit))
		require.NoError(t, err)

		var o domain.Observation
		if rng.IntN(3) > 0 {
			start := domain.Instant(rng.Int64N(1_000_000))
			o.Counter = domain.Counter{Used: 1 + rng.Int64N(limit), Start: start, Expires: start.Add(window)}
		}
		o.Full = rng.IntN(2) == 0
		if o.Full && rng.IntN(2) == 0 {
			o.EarliestExpiry, o.HasEarliestExpiry = domain.Instant(rng.Int64N(2_000_000)), true
		}
		now := domain.Instant(rng.Int64N(2_000_000))

		var next domain.Counter
		var d domain.Decision
		commit, err := domain.EvaluateCheck(&c, now, &o, &next, &d)
		require.NoError(t, err)

		b, err := domain.NewBatch([]domain.Check{c}, 1)
		require.NoError(t, err)
		b.Observe(0, o)
		batchCommit, err := b.Evaluate(now)
		require.NoError(t, err)
		batchDecision, ok, err := b.DecisionOf(0)
		require.NoError(t, err)
		require.True(t, ok)

		require.Equal(t, batchCommit, commit, "case %d: commit", i)
		require.Equal(t, batchDecision, d, "case %d: decision", i)
		if commit {
			require.Equal(t, b.Next(0), next, "case %d: persisted counter", i)
		}
	}
}

func TestEvaluateCheckRejectsInvalidInputAndCorruptState(t *testing.T) {
	t.Parallel()

	var next domain.Counter
	var d domain.Decision
	zero := domain.Check{}
	commit, err := domain.EvaluateCheck(&zero, 0, &domain.Observation{}, &next, &d)
	require.False(t, commit)
	require.ErrorIs(t, err, domain.ErrInvalidInput)

	hasher, err := domain.NewKeyHasher([]byte("single-check-test-secret-32bytes"))
	require.NoError(t, err)
	p := domain.MustPolicy("single", "check", 2, time.Second)
	c := domain.NewCheck(p, hasher.KeyString(p, "subject"))
	corrupt := domain.Observation{Counter: domain.Counter{Used: 3, Start: 0, Expires: 10}}
	commit, err = domain.EvaluateCheck(&c, 5, &corrupt, &next, &d)
	require.False(t, commit)
	var ce *domain.CorruptCounterError
	require.True(t, errors.As(err, &ce), "got %v", err)
	require.Equal(t, domain.Counter{}, next, "nothing to persist after an error")
}
