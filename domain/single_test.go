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

		other := domain.NewCheck(p, hasher.KeyString(p, "other"))
		b, err := domain.NewBatch([]domain.Check{c}, 1)
		require.NoError(t, err)
		batchCommit, batchDecision := driveOne(t, b, o, now)

		// The same check as a batch of one in its own space, through a
		// Batch that last held a batch of two, so that stale slices of a
		// larger batch cannot leak into it.
		var single domain.Batch
		require.NoError(t, single.Reset([]domain.Check{c, other}, 2))
		require.NoError(t, single.ResetSingle(&c))
		require.NoError(t, single.Ready())
		require.Equal(t, 1, single.Len())
		require.Equal(t, c.CounterKey(), single.Key(0))
		singleCommit, singleDecision := driveOne(t, &single, o, now)

		require.Equal(t, batchCommit, commit, "case %d: commit", i)
		require.Equal(t, batchDecision, d, "case %d: decision", i)
		require.Equal(t, batchCommit, singleCommit, "case %d: single commit", i)
		require.Equal(t, batchDecision, singleDecision, "case %d: single decision", i)
		bd, err := b.Decision()
		require.NoError(t, err)
		sd, err := single.Decision()
		require.NoError(t, err)
		require.Equal(t, bd, sd, "case %d: batch decision", i)
		if commit {
			require.Equal(t, b.Next(0), next, "case %d: persisted counter", i)
			require.Equal(t, b.Next(0), single.Next(0), "case %d: single persisted counter", i)
		}
	}
}

// driveOne observes o for the one check of b, evaluates at now and returns
// whether to commit and the check's decision.
func driveOne(t *testing.T, b *domain.Batch, o domain.Observation, now domain.Instant) (bool, domain.Decision) {
	t.Helper()
	b.Observe(0, o)
	commit, err := b.Evaluate(now)
	require.NoError(t, err)
	d, ok, err := b.DecisionOf(0)
	require.NoError(t, err)
	require.True(t, ok)
	return commit, d
}

func TestResetSingle(t *testing.T) {
	t.Parallel()
	f := setup(t)

	t.Run("invalid check", func(t *testing.T) {
		t.Parallel()
		var b domain.Batch
		zero := domain.Check{}
		err := b.ResetSingle(&zero)
		var ce *domain.CheckError
		require.ErrorAs(t, err, &ce, "a lone check reports its own error")
		require.ErrorIs(t, err, domain.ErrInvalidInput)
		require.ErrorIs(t, b.Ready(), domain.ErrInvalidInput, "a failed reset leaves nothing to drive")
		require.ErrorAs(t, b.ResetSingle(nil), &ce)
	})
	t.Run("keeps its own copy", func(t *testing.T) {
		t.Parallel()
		c := f.check("a")
		var b domain.Batch
		require.NoError(t, b.ResetSingle(&c))
		c = f.check("b")
		require.Equal(t, f.check("a").CounterKey(), b.Key(0))
		require.Equal(t, f.check("a").CounterKey(), b.Check(0).CounterKey())
	})
	t.Run("protocol", func(t *testing.T) {
		t.Parallel()
		c := f.check("a")
		var b domain.Batch
		require.NoError(t, b.ResetSingle(&c))
		_, err := b.Evaluate(ms(1))
		require.ErrorIs(t, err, domain.ErrBatchProtocol, "evaluated before observing")

		require.NoError(t, b.ResetSingle(&c))
		b.Observe(0, domain.Observation{})
		require.ErrorIs(t, b.Ready(), domain.ErrBatchProtocol, "a batch a store began is not ready")
		commit, err := b.Evaluate(ms(1))
		require.NoError(t, err)
		require.True(t, commit)
		_, err = b.Evaluate(ms(1))
		require.ErrorIs(t, err, domain.ErrBatchProtocol, "evaluated twice")
	})
	t.Run("back to a batch of several", func(t *testing.T) {
		t.Parallel()
		c := f.check("a")
		var b domain.Batch
		require.NoError(t, b.ResetSingle(&c))
		require.NoError(t, b.Reset([]domain.Check{f.check("b"), f.check("c")}, 0))
		require.Equal(t, 2, b.Len())
		require.Equal(t, f.check("c").CounterKey(), b.Key(1))
		for i := range 2 {
			b.Observe(i, domain.Observation{})
		}
		commit, err := b.Evaluate(ms(1))
		require.NoError(t, err)
		require.True(t, commit)
		bd, err := b.Decision()
		require.NoError(t, err)
		require.Len(t, bd.Decisions(), 2)
	})
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

// TestEvaluateCounterMatchesEvaluateCheck drives random stored counters
// through EvaluateCounter and EvaluateCheck: a store that evaluates its
// counter in place must decide and persist exactly as one that observes
// it, and must be left with its counter unchanged whenever nothing is
// committed.
func TestEvaluateCounterMatchesEvaluateCheck(t *testing.T) {
	t.Parallel()

	hasher, err := domain.NewKeyHasher([]byte("single-check-test-secret-32bytes"))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		limit := 1 + rng.Int64N(10)
		window := time.Duration(1+rng.Int64N(1000)) * time.Millisecond
		p := domain.MustPolicy("single", "counter", limit, window)
		if rng.IntN(2) == 0 {
			p, err = p.WithMode(domain.Shadow)
			require.NoError(t, err)
		}
		c, err := domain.NewCheckCost(p, hasher.KeyString(p, "subject"), 1+rng.Int64N(limit))
		require.NoError(t, err)
		start := domain.Instant(rng.Int64N(1_000_000))
		stored := domain.Counter{Used: 1 + rng.Int64N(limit), Start: start, Expires: start.Add(window)}
		// Active, expired, and behind the window's start.
		now := start.Add(time.Duration(rng.Int64N(int64(2*window+window/2))) - window/2)

		var next domain.Counter
		var want domain.Decision
		wantCommit, err := domain.EvaluateCheck(&c, now, &domain.Observation{Counter: stored}, &next, &want)
		require.NoError(t, err)

		counter := stored
		var d domain.Decision
		commit, err := domain.EvaluateCounter(&c, now, &counter, &d)
		require.NoError(t, err)
		require.Equal(t, wantCommit, commit, "case %d: commit", i)
		require.Equal(t, want, d, "case %d: decision", i)
		if commit {
			require.Equal(t, next, counter, "case %d: the counter to persist", i)
		} else {
			require.Equal(t, stored, counter, "case %d: nothing written without a commit", i)
		}
	}
}

func TestEvaluateCounterRejectsInvalidInputAndCorruptState(t *testing.T) {
	t.Parallel()

	hasher, err := domain.NewKeyHasher([]byte("single-check-test-secret-32bytes"))
	require.NoError(t, err)
	p := domain.MustPolicy("single", "counter", 2, time.Second)
	c := domain.NewCheck(p, hasher.KeyString(p, "subject"))
	stored := domain.Counter{Used: 1, Start: 0, Expires: 1_000_000}
	var d domain.Decision

	zero := domain.Check{}
	counter := stored
	commit, err := domain.EvaluateCounter(&zero, 5, &counter, &d)
	require.False(t, commit)
	require.ErrorIs(t, err, domain.ErrInvalidInput)
	_, err = domain.EvaluateCounter(nil, 5, nil, nil)
	require.ErrorIs(t, err, domain.ErrInvalidInput, "the check is reported first")

	for name, call := range map[string]func() (bool, error){
		"nil counter":    func() (bool, error) { return domain.EvaluateCounter(&c, 5, nil, &d) },
		"nil decision":   func() (bool, error) { return domain.EvaluateCounter(&c, 5, &counter, nil) },
		"absent counter": func() (bool, error) { return domain.EvaluateCounter(&c, 5, &domain.Counter{}, &d) },
	} {
		commit, err := call()
		require.False(t, commit, name)
		require.ErrorIs(t, err, domain.ErrBatchProtocol, name)
	}

	for name, bad := range map[string]domain.Counter{
		"over the limit":         {Used: 3, Start: 0, Expires: 10},
		"longer than the window": {Used: 1, Start: 0, Expires: 1_000_001},
		"ends before it starts":  {Used: 1, Start: 10, Expires: 10},
		"negative use":           {Used: -1, Start: 0, Expires: 10},
	} {
		counter := bad
		commit, err := domain.EvaluateCounter(&c, 5, &counter, &d)
		require.False(t, commit, name)
		var ce *domain.CorruptCounterError
		require.True(t, errors.As(err, &ce), "%s: got %v", name, err)
		require.Equal(t, bad, counter, "%s: nothing written after an error", name)
	}
	require.Equal(t, stored, counter)
}
