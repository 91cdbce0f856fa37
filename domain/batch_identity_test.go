package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// A counter key is the policy's identity and the subject key, not the
// Policy value: two policies built apart from the same id, scope, limit and
// window name one counter, so a batch naming a subject under both is a
// duplicate. A store locks each key of a batch once; a duplicate that got
// through would lock one key twice.
func TestBatchDuplicateKeyAcrossEqualPolicies(t *testing.T) {
	t.Parallel()
	f := setup(t)
	twin := newPolicy(t, "auth.login", "identity", 5, time.Second)
	require.True(t, twin.Equal(f.policy))
	require.False(t, twin == f.policy, "built apart: no shared definition")
	a := f.check("subject")
	b := domain.NewCheck(twin, f.hasher.KeyString(twin, "subject"))
	require.Equal(t, a.CounterKey(), b.CounterKey())

	_, err := domain.NewBatch([]domain.Check{a, f.check("other"), b}, 0)
	requireBatchError(t, err, domain.BatchError{Problem: domain.BatchDuplicateKey, Size: 3, Index: 2, First: 0})

	// The twin in shadow mode is still the same counter: the modes differ
	// first.
	shadow := domain.NewCheck(withMode(t, twin, domain.Shadow), b.SubjectKey())
	_, err = domain.NewBatch([]domain.Check{a, shadow}, 0)
	requireBatchError(t, err, domain.BatchError{Problem: domain.BatchMixedModes, Size: 2, Index: 1, First: 0})
	_, err = domain.NewBatch([]domain.Check{withShadow(t, a), shadow}, 0)
	requireBatchError(t, err, domain.BatchError{Problem: domain.BatchDuplicateKey, Size: 2, Index: 1, First: 0})

	// A policy differing in any part of its identity is another counter.
	other := newPolicy(t, "auth.login", "identity", 6, time.Second)
	_, err = domain.NewBatch([]domain.Check{a, domain.NewCheck(other, b.SubjectKey())}, 0)
	require.NoError(t, err)
}

// withShadow returns c under its policy in shadow mode.
func withShadow(t *testing.T, c domain.Check) domain.Check {
	t.Helper()
	return domain.NewCheck(withMode(t, c.Policy(), domain.Shadow), c.SubjectKey())
}
