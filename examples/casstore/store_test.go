package casstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/examples/casstore"
)

func setup(t *testing.T) (domain.Policy, domain.SubjectKey) {
	t.Helper()
	id, err := domain.NewPolicyID("casstore.test")
	require.NoError(t, err)
	scope, err := domain.NewScopeID("subject")
	require.NoError(t, err)
	p, err := domain.NewPolicy(id, scope, 2, time.Minute)
	require.NoError(t, err)
	return p, domain.SubjectKeyFromBytes([32]byte{1, 2, 3})
}

// TestConflictStartsAgain makes a second admission of the same key commit
// between the first one's read and its write, by running it from the
// clock the first one reads after its read. The first must find the
// conflict, read again, and count on top of the second.
func TestConflictStartsAgain(t *testing.T) {
	t.Parallel()
	p, k := setup(t)
	var (
		store  *casstore.Store
		inner  domain.Decision
		err    error
		nested bool
	)
	clock := func() time.Duration {
		if !nested {
			nested = true
			inner, err = store.AdmitCheck(context.Background(), domain.NewCheck(p, k))
		}
		return time.Second
	}
	store, cerr := casstore.New(casstore.Config{Capacity: 10, Clock: clock})
	require.NoError(t, cerr)

	outer, oerr := store.AdmitCheck(context.Background(), domain.NewCheck(p, k))
	require.NoError(t, oerr)
	require.NoError(t, err)
	a, ok := inner.Allowance()
	require.True(t, ok, "the admission that committed first is allowed")
	require.Equal(t, int64(1), a.Remaining)
	a, ok = outer.Allowance()
	require.True(t, ok, "the admission that conflicted is allowed after reading again")
	require.Equal(t, int64(0), a.Remaining, "it counts on top of the one that committed first")
	require.Equal(t, int64(1), store.Conflicts())

	d, err := store.AdmitCheck(context.Background(), domain.NewCheck(p, k))
	require.NoError(t, err)
	require.Equal(t, domain.Denied, d.Outcome(), "both units were counted")
}

// TestCancelledAdmissionConsumesNothing: an admission whose context ends
// before it commits fails with an error that says nothing was consumed.
func TestCancelledAdmissionConsumesNothing(t *testing.T) {
	t.Parallel()
	p, k := setup(t)
	store, err := casstore.New(casstore.Config{Capacity: 10})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = store.AdmitCheck(ctx, domain.NewCheck(p, k))
	require.ErrorIs(t, err, context.Canceled)
	var ae *casstore.AdmitError
	require.ErrorAs(t, err, &ae)
	require.False(t, ae.MayHaveConsumedQuota())
	st, err := store.Stats(context.Background())
	require.NoError(t, err)
	require.Zero(t, st.Entries)
}

func TestNewRejectsAZeroCapacity(t *testing.T) {
	t.Parallel()
	_, err := casstore.New(casstore.Config{})
	require.ErrorIs(t, err, casstore.ErrCapacity)
}
