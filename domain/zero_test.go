package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// TestNilBatchNeverPanics: a nil *Batch used to panic in every method but
// Ready. It reports BatchNotPrepared where a caller prepares a batch and
// ErrBatchProtocol where a store drives one.
func TestNilBatchNeverPanics(t *testing.T) {
	t.Parallel()
	var b *domain.Batch
	p := domain.MustPolicy("nil", "batch", 2, time.Minute)
	h, err := domain.NewKeyHasher([]byte("domain zero-value test secret, 32+ bytes"))
	require.NoError(t, err)
	c := domain.NewCheck(p, h.KeyString(p, "alice"))

	require.NotPanics(t, func() {
		require.Zero(t, b.Len())
		require.Equal(t, domain.Enforce, b.Mode())
		require.ErrorIs(t, b.Ready(), domain.ErrInvalidInput)
		require.ErrorIs(t, b.Reset([]domain.Check{c}, 0), domain.ErrInvalidInput)
		require.ErrorIs(t, b.ResetSingle(&c), domain.ErrInvalidInput)
		b.Observe(0, domain.Observation{})
		_, err := b.Evaluate(0)
		require.ErrorIs(t, err, domain.ErrBatchProtocol)
		_, _, err = b.DecisionOf(0)
		require.ErrorIs(t, err, domain.ErrBatchProtocol)
		_, err = b.Decision()
		require.ErrorIs(t, err, domain.ErrBatchProtocol)
	})
}

// TestZeroBatchNeverPanics: a zero Batch is not prepared. Mode used to
// index its empty checks.
func TestZeroBatchNeverPanics(t *testing.T) {
	t.Parallel()
	var b domain.Batch
	require.NotPanics(t, func() {
		require.Zero(t, b.Len())
		require.Equal(t, domain.Enforce, b.Mode())
		require.ErrorIs(t, b.Ready(), domain.ErrInvalidInput)
		b.Observe(0, domain.Observation{})
		_, err := b.Evaluate(0)
		require.ErrorIs(t, err, domain.ErrBatchProtocol)
		_, _, err = b.DecisionOf(0)
		require.ErrorIs(t, err, domain.ErrBatchProtocol)
		_, err = b.Decision()
		require.ErrorIs(t, err, domain.ErrBatchProtocol)
		require.ErrorIs(t, b.Reset(nil, 0), domain.ErrInvalidBatch)
		require.ErrorIs(t, b.ResetSingle(nil), domain.ErrInvalidCheck)
		require.ErrorIs(t, b.ResetSingle(&domain.Check{}), domain.ErrInvalidCheck)
	})
}

// TestEvaluateCheckNilArguments: EvaluateCheck used to dereference nil
// pointers. A nil check is invalid input; a nil observation, next counter
// or decision is the store's protocol mistake. Nothing is committed.
func TestEvaluateCheckNilArguments(t *testing.T) {
	t.Parallel()
	p := domain.MustPolicy("nil", "evaluate", 2, time.Minute)
	h, err := domain.NewKeyHasher([]byte("domain zero-value test secret, 32+ bytes"))
	require.NoError(t, err)
	c := domain.NewCheck(p, h.KeyString(p, "alice"))
	var o domain.Observation
	var next domain.Counter
	var d domain.Decision

	cases := []struct {
		name string
		call func() (bool, error)
		want error
	}{
		{"nil check", func() (bool, error) { return domain.EvaluateCheck(nil, 0, &o, &next, &d) }, domain.ErrInvalidCheck},
		{"all nil", func() (bool, error) { return domain.EvaluateCheck(nil, 0, nil, nil, nil) }, domain.ErrInvalidCheck},
		{"zero check", func() (bool, error) { return domain.EvaluateCheck(&domain.Check{}, 0, &o, &next, &d) }, domain.ErrInvalidCheck},
		{"nil observation", func() (bool, error) { return domain.EvaluateCheck(&c, 0, nil, &next, &d) }, domain.ErrBatchProtocol},
		{"nil next", func() (bool, error) { return domain.EvaluateCheck(&c, 0, &o, nil, &d) }, domain.ErrBatchProtocol},
		{"nil decision", func() (bool, error) { return domain.EvaluateCheck(&c, 0, &o, &next, nil) }, domain.ErrBatchProtocol},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var commit bool
			var err error
			require.NotPanics(t, func() { commit, err = tc.call() })
			require.False(t, commit)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// TestZeroValuesPrint: nil and zero values of the package's types print
// under every printer without panicking.
func TestZeroValuesPrint(t *testing.T) {
	t.Parallel()
	leakcheck.CheckPrintable(t, "zero KeyHasher", domain.KeyHasher{})
	leakcheck.CheckPrintable(t, "zero Policy", domain.Policy{})
	leakcheck.CheckPrintable(t, "zero Check", domain.Check{})
	leakcheck.CheckPrintable(t, "zero Batch", &domain.Batch{})
	leakcheck.CheckPrintable(t, "nil *Batch", (*domain.Batch)(nil))
	leakcheck.CheckPrintable(t, "zero BatchDecision", domain.BatchDecision{})
	leakcheck.CheckPrintable(t, "zero Decision", domain.Decision{})
	leakcheck.CheckPrintable(t, "zero Denial", domain.Denial{})
	leakcheck.CheckPrintable(t, "zero CounterKey", domain.CounterKey{})
	leakcheck.CheckPrintable(t, "zero SubjectKey", domain.SubjectKey{})
	leakcheck.CheckPrintable(t, "zero Observation", domain.Observation{})
	leakcheck.CheckPrintable(t, "zero BatchError", &domain.BatchError{})
	leakcheck.CheckPrintable(t, "zero CheckError", &domain.CheckError{})
	leakcheck.CheckPrintable(t, "zero PolicyError", &domain.PolicyError{})
	leakcheck.CheckPrintable(t, "zero IdentifierError", &domain.IdentifierError{})
}

// TestZeroCounterKeyHasNoSubjectKey: the subject key of a zero CounterKey,
// or of one joined from the zero SubjectKey, used to be a set key (whose
// bytes were the process's key mask), from which NewCheck built a valid
// check of a key no hasher derived. It is the zero SubjectKey, and the
// check it builds is invalid.
func TestZeroCounterKeyHasNoSubjectKey(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for name, ck := range map[string]domain.CounterKey{
		"zero":             {},
		"zero subject key": domain.NewCounterKey(f.policy.Fingerprint(), domain.SubjectKey{}),
	} {
		require.True(t, ck.SubjectKey().IsZero(), name)
		err := domain.NewCheck(f.policy, ck.SubjectKey()).Validate()
		var ce *domain.CheckError
		require.ErrorAs(t, err, &ce, name)
		require.Equal(t, domain.CheckZeroKey, ce.Problem, name)
	}
	// A real key's keeps its bytes.
	k := f.key("subject")
	ck := domain.NewCounterKey(f.policy.Fingerprint(), k)
	require.Equal(t, k, ck.SubjectKey())
	require.Equal(t, k.Bytes(), ck.SubjectKey().Bytes())
}

// TestDecisionOfOutOfRange: DecisionOf of an allowed batch panicked with
// an index out of range for an i outside the batch (of a batch of one,
// for any i but 0), where BatchDecision.Decision answers ok false. It
// answers ok false too.
func TestDecisionOfOutOfRange(t *testing.T) {
	t.Parallel()
	f := setup(t)
	single := new(domain.Batch)
	c := f.check("single")
	require.NoError(t, single.ResetSingle(&c))
	for name, b := range map[string]*domain.Batch{
		"batch":        newBatch(t, f.check("a"), f.check("b")),
		"batch of one": single,
	} {
		obs := make([]domain.Observation, b.Len())
		commit, err := observeAndEvaluate(t, b, ms(1), obs...)
		require.NoError(t, err)
		require.True(t, commit)
		for _, i := range []int{-1, b.Len(), 1 << 20} {
			require.NotPanics(t, func() {
				d, ok, err := b.DecisionOf(i)
				require.NoError(t, err)
				require.False(t, ok, "%s: %d", name, i)
				require.Equal(t, domain.Decision{}, d)
			}, "%s: %d", name, i)
		}
		d, ok, err := b.DecisionOf(0)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, domain.Allowed, d.Outcome())
	}
}

// TestObserveOutOfRange: a store that observed an index outside its batch
// made Observe panic, with the store's locks held. The batch is spoiled
// instead: Evaluate reports ErrBatchProtocol and nothing is committed,
// even once every real index has been observed.
func TestObserveOutOfRange(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, i := range []int{-1, 1, 2, 1 << 20} {
		single := new(domain.Batch)
		c := f.check("single")
		require.NoError(t, single.ResetSingle(&c))
		for name, b := range map[string]*domain.Batch{
			"batch of two": newBatch(t, f.check("a"), f.check("b")),
			"batch of one": single,
		} {
			if i == 1 && b.Len() == 2 {
				continue // in range
			}
			require.NotPanics(t, func() { b.Observe(i, domain.Observation{}) }, "%s: %d", name, i)
			for j := range b.Len() {
				b.Observe(j, domain.Observation{})
			}
			commit, err := b.Evaluate(ms(1))
			require.ErrorIs(t, err, domain.ErrBatchProtocol, "%s: %d", name, i)
			require.False(t, commit)
			_, err = b.Decision()
			require.ErrorIs(t, err, domain.ErrBatchProtocol)
		}
	}
}
