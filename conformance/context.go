package conformance

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// contextScenario checks what a store does with a nil context.Context.
// Limiters refuse one before they reach the store, so every other case
// would pass a store that panics on it; this one calls the store's own
// methods, as a host that uses a store directly (a maintenance loop calling
// CleanupExpired) does.
func contextScenario() scenario {
	return scenario{name: "context", cases: []testCase{
		{name: "nil_context_is_invalid_input", run: testNilContext},
	}}
}

// testNilContext calls Admit, AdmitCheck (when offered) and CleanupExpired
// (when offered) with a nil context: each must return an error matching
// [ports.ErrNilContext]'s [domain.ErrInvalidInput], never panic, and leave
// every counter as it was.
func testNilContext(t *testing.T, f *fixture) {
	const g = "context: a nil context is the caller's mistake: the store returns an error matching domain.ErrInvalidInput " +
		"(ports.ErrNilContext), consuming and removing nothing, and never panics"
	var nilCtx context.Context
	p := f.policy(1, window)
	k := f.key()

	b, err := domain.NewBatch([]domain.Check{f.check(p, k)}, f.opts.MaxBatchSize)
	require.NoError(t, err, "harness: a batch of one")
	f.admits.Add(1)
	f.rep.admits.Add(1)
	err = guard(func() error { return f.inst.Store.Admit(nilCtx, b) })
	f.log.add("Admit(nil ctx, batch [%s]) → error: %v", f.log.check(f.check(p, k)), err)
	f.requireNilContextRefused("Admit", err, g)

	if ca, ok := f.inst.Store.(ports.CheckAdmitter); ok {
		f.rep.called(CheckAdmitter)
		var d domain.Decision
		err := guard(func() (err error) {
			d, err = ca.AdmitCheck(nilCtx, f.check(p, k))
			return err
		})
		f.log.add("AdmitCheck(nil ctx, %s) → %s, error: %v", f.log.check(f.check(p, k)), describe(d), err)
		f.requireNilContextRefused("AdmitCheck", err, g)
	}
	a := f.allow(f.check(p, k), 0, g+" (the key is still new: the refused calls consumed nothing)")
	f.requireDuration(window, a.ResetAfter, g+" (the window starts at this check)")

	if _, ok := f.inst.Store.(ports.Cleaner); !ok {
		return
	}
	f.advance(window)
	// Zero included: a nil context is reported before a zero maximum is
	// answered (see ports.Cleaner).
	for _, max := range []int{0, 1, 10} {
		n, err := f.cleanupWith(nilCtx, "nil ctx", max)
		f.requireNilContextRefused("CleanupExpired", err, g+" (CleanupExpired)")
		require.Zero(t, n, "%s: CleanupExpired(nil ctx, %d) reported %d removed", g, max, n)
	}
	cleanup, _ := f.cleaner()
	require.Equal(t, 1, f.cleanAll(cleanup, 10, g), "%s: the expired counter was still there to remove", g)
}

// requireNilContextRefused checks the error of method called with a nil
// context.
func (f *fixture) requireNilContextRefused(method string, err error, guarantee string) {
	f.t.Helper()
	var pe *panicError
	require.False(f.t, errors.As(err, &pe), "%s: %s panicked on a nil context instead of returning an error: %v", guarantee, method, err)
	require.Error(f.t, err, "%s: %s accepted a nil context", guarantee, method)
	require.ErrorIs(f.t, err, domain.ErrInvalidInput, "%s: %s's error for a nil context must match domain.ErrInvalidInput "+
		"(return or wrap ports.ErrNilContext)", guarantee, method)
	require.False(f.t, ports.MayHaveConsumedQuota(err), "%s: %s's error must say nothing was consumed", guarantee, method)
}
