package conformance

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// testCloseRacingAdmission closes the store while an admission of a new
// key runs: on a store that reads a ManualClock, the admission is pinned
// just after its clock sample, with every lock held, while Close runs. A
// Close that waits for admissions in flight, or one that only marks the
// store closed, lets the admission finish, allowed or refused as closed. A
// Close that releases what admissions write to (empties a map, returns a
// pool) without waiting makes the admission write into nothing, which
// panics or fails; no case that closes an idle store sees it.
func testCloseRacingAdmission(t *testing.T, f *fixture) {
	const g = "close: Close racing an admission lets it finish, allowed or refused as closed, and fails every later call closed"
	closer, ok := f.inst.Store.(ports.Closer)
	if !ok {
		f.skip("close: the store does not implement ports.Closer")
	}
	p := f.policy(2, window)
	k := f.key()
	c := f.check(p, k)
	closeOp := func(context.Context) result {
		f.rep.called(Closer)
		return result{err: f.guard(closer.Close)}
	}
	r1, r2, held := f.pinnedRace(g, f.checkOp(c, f.path), func() {}, closeOp)
	how := "a store that reads no ManualClock ran the check to its end before Close"
	if held {
		how = "the check pinned just after its clock sample"
	}
	f.log.add("race: check %s via %s, %s, while Close ran → check %s; Close → %v", f.log.check(c), f.path, how,
		describeResult(r1), r2.err)
	var pe *panicError
	require.False(t, errors.As(r1.err, &pe), "%s: the admission Close raced with panicked (Close released what it writes "+
		"to without waiting for it): %v", g, r1.err)
	require.NoError(t, r2.err, "%s: Close failed", g)
	if r1.err == nil {
		require.Equal(t, domain.Allowed, r1.outcome, "%s: the first check of a new key is within the limit, got %s (%s)",
			g, r1.outcome, r1.reason)
	} else {
		requireFailedClosed(t, r1.err, k, g+" (the admission Close raced with failed)", "no error")
	}
	d, err := f.apply(c, f.path)
	requireFailedClosed(t, err, k, g+" (a check after Close returned)", describe(d))
}

// testClosedErrorIsNoCallersMistake closes the store and makes valid
// calls: each error matches [ports.ErrClosed] and not
// [domain.ErrInvalidInput], which says the caller sent something invalid.
// A host answers a caller's mistake with a client error and a closed store
// with a server error, and a closed-store error that claims both sends its
// callers away for good.
func testClosedErrorIsNoCallersMistake(t *testing.T, f *fixture) {
	const g = "close: a closed store's error for a valid call is the store's state, not the caller's mistake: it does " +
		"not match domain.ErrInvalidInput"
	p, k := f.closeAfterACheck(t, g)

	d, err := f.apply(f.check(p, k), f.path)
	requireFailedClosed(t, err, k, g+" (a single check)", describe(d))
	require.NotErrorIs(t, err, domain.ErrInvalidInput, "%s: a single check", g)
	var bd domain.BatchDecision
	err = f.guard(func() (err error) {
		bd, err = f.limiter.CheckAll(f.ctx, []domain.Check{f.check(p, f.key()), f.check(p, k)})
		return err
	})
	f.log.add("batch via Admit → %s, error: %v", describeBatch(bd), err)
	requireFailedClosed(t, err, k, g+" (a batch)", describeBatch(bd))
	require.NotErrorIs(t, err, domain.ErrInvalidInput, "%s: a batch", g)
	if cleanup, ok := f.cleaner(); ok {
		_, err := cleanup(1)
		requireFailedClosed(t, err, k, g+" (CleanupExpired)", "no error")
		require.NotErrorIs(t, err, domain.ErrInvalidInput, "%s: CleanupExpired(1)", g)
	}
	if sr, ok := f.inst.Store.(ports.StatsReporter); ok {
		f.rep.called(StatsReporter)
		_, err := guardStats(f, sr)
		requireFailedClosed(t, err, k, g+" (Stats)", "no error")
		require.NotErrorIs(t, err, domain.ErrInvalidInput, "%s: Stats", g)
	}
}
