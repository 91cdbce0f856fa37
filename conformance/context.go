package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// contextScenario checks what a store does with a context.Context that is
// nil, done before the call, or cancelled while the admission runs.
// Limiters refuse a nil one before they reach the store, so every other
// case would pass a store that panics on it; nil_context_is_invalid_input
// calls the store's own methods, as a host that uses a store directly (a
// maintenance loop calling CleanupExpired) does. A done context reaches
// the store through the limiter: the caller has given up, so nothing may
// be admitted for it. And an admission whose context ends while it runs
// may finish or fail, but its error must never say that nothing was
// consumed when a unit was.
func contextScenario() scenario {
	return scenario{name: "context", cases: []testCase{
		{name: "nil_context_is_invalid_input", run: testNilContext},
		{name: "done_context_admits_nothing", single: true, run: testDoneContext},
		{name: "done_context_with_a_cause_admits_nothing", single: true, run: testDoneContextWithCause},
		{name: "cancelled_admission_never_hides_a_unit", single: true, run: testCancelledAdmission},
		{name: "cancelled_batch_stays_whole_and_keeps_no_slot", opts: capacityOptions, run: testCancelledBatch},
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
	err = f.guard(func() error { return f.inst.Store.Admit(nilCtx, b) })
	f.log.add("Admit(nil ctx, batch [%s]) → error: %v", f.log.check(f.check(p, k)), err)
	f.requireNilContextRefused("Admit", err, g)

	if ca, ok := f.inst.Store.(ports.CheckAdmitter); ok {
		f.rep.called(CheckAdmitter)
		var d domain.Decision
		err := f.guard(func() (err error) {
			d, err = ca.AdmitCheck(nilCtx, f.check(p, k))
			return err
		})
		f.log.add("AdmitCheck(nil ctx, %s) → %s, error: %v", f.log.check(f.check(p, k)), describe(d), err)
		f.requireNilContextRefused("AdmitCheck", err, g)
	}
	a := f.allow(f.check(p, k), 0, g+" (the key is still new: the refused calls consumed nothing)")
	f.requireDuration(window, a.ResetAfter, g+" (the window starts at this check)")
	testNilContextStats(t, f, g)

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
	// A negative maximum is reported before a nil context: both are the
	// caller's mistakes, and ports.Cleaner names the maximum first, so that
	// a misconfigured maintenance loop hears about it whatever else is wrong.
	for _, max := range []int{-1, -1 << 31} {
		n, err := f.cleanupWith(nilCtx, "nil ctx", max)
		require.ErrorIs(t, err, ports.ErrNegativeMax,
			"%s: CleanupExpired(nil ctx, %d): a negative maximum is reported before the nil context (see ports.Cleaner)", g, max)
		require.Zero(t, n, "%s: CleanupExpired(nil ctx, %d) reported %d removed", g, max, n)
	}
	cleanup, _ := f.cleaner()
	require.Equal(t, 1, f.cleanAll(cleanup, 10, g), "%s: the expired counter was still there to remove", g)
}

// testNilContextStats calls Stats (when offered) with a nil context: it
// must not panic, and when it refuses, the error is the caller's mistake.
// (A store whose Stats never looks at its context may answer.)
func testNilContextStats(t *testing.T, f *fixture, guarantee string) {
	sr, ok := f.inst.Store.(ports.StatsReporter)
	if !ok {
		return
	}
	f.rep.called(StatsReporter)
	var nilCtx context.Context
	err := f.guard(func() (err error) {
		_, err = sr.Stats(nilCtx)
		return err
	})
	f.log.add("Stats(nil ctx) → error: %v", err)
	var pe *panicError
	require.False(t, errors.As(err, &pe), "%s: Stats panicked on a nil context instead of returning an error: %v", guarantee, err)
	if err != nil {
		require.ErrorIs(t, err, domain.ErrInvalidInput, "%s: Stats's error for a nil context must match domain.ErrInvalidInput "+
			"(return or wrap ports.ErrNilContext)", guarantee)
	}
}

// testDoneContext applies a single check (on the case's path) and a batch
// with a context that is done before the call, cancelled or past its
// deadline: the store must refuse each with an error matching the
// context's error, saying nothing was consumed, and consume nothing.
func testDoneContext(t *testing.T, f *fixture) {
	const g = "context: a context done before the call admits nothing: the store refuses it with an error matching the " +
		"context's error that says nothing was consumed"
	cancelled, cancel := context.WithCancel(f.ctx)
	cancel()
	expired, cancelExpired := context.WithDeadline(f.ctx, time.Unix(0, 0))
	defer cancelExpired()
	f.requireDoneContextsAdmitNothing(g, []doneContext{
		{"cancelled ctx", cancelled, context.Canceled},
		{"ctx past its deadline", expired, context.DeadlineExceeded},
	})
}

// doneContext is a context done before the call, and the error its
// refusal must match.
type doneContext struct {
	name string
	ctx  context.Context
	want error
}

// requireDoneContextsAdmitNothing applies a single check (on the case's
// path) and a batch under each of dcs: the store must refuse each with an
// error matching the context's error, saying nothing was consumed, and
// consume nothing.
func (f *fixture) requireDoneContextsAdmitNothing(g string, dcs []doneContext) {
	f.t.Helper()
	p := f.policy(2, window)
	k, other := f.key(), f.key()
	for _, dc := range dcs {
		d, err := f.applyWith(dc.ctx, dc.name, f.check(p, k), f.path)
		f.requireDoneContextRefused(err, dc.want, fmt.Sprintf("%s (a single check via %s, %s)", g, f.path, dc.name), describe(d))
		checks := []domain.Check{f.check(p, other), f.check(p, k)}
		var bd domain.BatchDecision
		err = f.guard(func() (err error) {
			bd, err = f.limiter.CheckAll(dc.ctx, checks)
			return err
		})
		f.log.add("batch %s via Admit with %s → %s, error: %v", f.log.batch(checks), dc.name, describeBatch(bd), err)
		f.requireDoneContextRefused(err, dc.want, fmt.Sprintf("%s (a batch via Admit, %s)", g, dc.name), describeBatch(bd))
	}
	a := f.allow(f.check(p, k), 1, g+" (the key is still new: the refused calls consumed nothing)")
	f.requireDuration(window, a.ResetAfter, g+" (the window starts at this check)")
	f.allow(f.check(p, other), 1, g+" (the batch's other key is still new too)")
}

// requireDoneContextRefused checks the error of a call made with a done
// context whose error is want.
func (f *fixture) requireDoneContextRefused(err, want error, guarantee, got string) {
	f.t.Helper()
	var pe *panicError
	require.False(f.t, errors.As(err, &pe), "%s: the store panicked: %v", guarantee, err)
	require.Error(f.t, err, "%s: the store admitted for a caller that had given up: %s", guarantee, got)
	require.ErrorIs(f.t, err, want, "%s: the error must match the context's error", guarantee)
	require.False(f.t, ports.MayHaveConsumedQuota(err), "%s: the store checked the context before any work, so its error "+
		"must say nothing was consumed (implement ports.QuotaConsumer): %v", guarantee, err)
}

// testCancelledAdmission cancels a check's context while its admission
// runs: on a store that reads a ManualClock, just after the admission
// samples its clock, with every lock held. The store may finish the
// admission (the caller's cancellation came too late) or give up, but what
// it answers must be true of the counter: an allowed check counted, and an
// error that says nothing was consumed consumed nothing. A store that
// writes and then reports the cancellation as an error that consumed
// nothing (a driver's context error after the commit was sent, wrapped as
// "not consumed") lets a caller retry a unit that was spent.
func testCancelledAdmission(t *testing.T, f *fixture) {
	const g = "context: an admission whose context is cancelled while it runs may finish or fail, but an error that says " +
		"nothing was consumed consumed nothing"
	const limit = 3
	p, k := f.policy(limit, window), f.key()
	c := f.check(p, k)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	first := func(context.Context) result { return f.checkOp(c, f.path)(ctx) }
	nothing := func(context.Context) result { return result{} }
	r, _, held := f.pinnedRace(g, first, cancel, nothing)
	how := "a store that reads no ManualClock ran the check to its end before the cancellation"
	if held {
		how = "the check pinned just after its clock sample"
	}
	f.log.add("race: check %s via %s, %s, while its context was cancelled → %s", f.log.check(c), f.path, how, describeResult(r))
	var pe *panicError
	require.False(t, errors.As(r.err, &pe), "%s: the store panicked: %v", g, r.err)
	switch {
	case r.err == nil:
		require.Equal(t, domain.Allowed, r.outcome, "%s: the first check on a key is within the limit, got %s (%s)", g, r.outcome, r.reason)
		f.allow(c, limit-2, g+" (the allowed check was counted)")
	case ports.MayHaveConsumedQuota(r.err):
		// The store does not know; either is true.
	default:
		f.allow(c, limit-1, g+" (the store answered an error saying nothing was consumed, so the key must still be new)")
	}
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
