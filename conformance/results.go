package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// resultsScenario checks what a store returns beside an error, and which
// of several problems its error names. A store error fails closed: the
// request must not proceed, so no decision may travel with it (a caller
// that reads the decision first, or logs it, would see a permit), and no
// report may travel with a closed store's error. When a call is a caller's
// mistake and its context is also done or nil, the mistake is reported, as
// ports.Store orders Batch.Ready's error first; and a context the caller
// ended is the caller's own error, never the closed store a host shuts
// down on.
func resultsScenario() scenario {
	return scenario{name: "results", cases: []testCase{
		{name: "an_error_carries_no_decision_and_no_report", run: testErrorCarriesNoResult},
		{name: "invalid_single_check_is_reported_before_its_context", run: testInvalidCheckBeforeContext},
		{name: "unready_batch_is_reported_before_a_done_context", run: testBatchBeforeDoneContext},
		{name: "an_open_store_never_answers_closed", run: testOpenStoreNeverClosed},
	}}
}

// requireNoDecision checks that d, returned beside err, is the zero
// Decision.
func (f *fixture) requireNoDecision(d domain.Decision, err error, guarantee, call string) {
	f.t.Helper()
	var pe *panicError
	require.False(f.t, errors.As(err, &pe), "%s (%s): the store panicked: %v", guarantee, call, err)
	require.Error(f.t, err, "%s (%s): the call must fail, got %s", guarantee, call, describe(d))
	require.True(f.t, d == domain.Decision{}, "%s (%s): beside its error (%v) AdmitCheck returned %s instead of the zero "+
		"Decision (permits request: %t)", guarantee, call, err, describe(d), d.PermitsRequest())
}

// testErrorCarriesNoResult makes AdmitCheck fail after an allowed check, in
// every way a caller can make it fail (a nil context, a done context, an
// invalid check, a context cancelled while the check runs, a closed store),
// and requires the zero Decision beside each error; a closed store's Stats
// must report nothing beside ErrClosed.
func testErrorCarriesNoResult(t *testing.T, f *fixture) {
	const g = "results: an error fails closed and carries no result: AdmitCheck returns the zero Decision beside an error, " +
		"and a closed store's Stats the zero Stats"
	ca, single := f.inst.Store.(ports.CheckAdmitter)
	_, closer := f.inst.Store.(ports.Closer)
	if !single && !closer {
		f.skip("results: the store has neither a single-check path nor Close, so no call returns a result beside an error")
	}
	p, k := f.policy(3, window), f.key()
	c := f.check(p, k)
	if single {
		f.allowVia(c, viaAdmitCheck, 2, g+" (a first check, whose allowed decision a store could hand out again)")
		var nilCtx context.Context
		cancelled, cancel := context.WithCancel(f.ctx)
		cancel()
		for _, call := range []struct {
			name  string
			ctx   context.Context
			check domain.Check
		}{
			{"nil ctx", nilCtx, c},
			{"cancelled ctx", cancelled, c},
			{"the zero check", f.ctx, domain.Check{}},
		} {
			f.rep.called(CheckAdmitter)
			var d domain.Decision
			err := f.guard(func() (err error) {
				d, err = ca.AdmitCheck(call.ctx, call.check)
				return err
			})
			f.log.add("AdmitCheck(%s, %s) → %s, error: %v", call.name, f.log.check(call.check), describe(d), err)
			f.requireNoDecision(d, err, g, "AdmitCheck with "+call.name)
		}

		// A cancellation that arrives while the check runs, just after
		// its clock sample: the store may finish (no error) or give up,
		// but an error it gives up with carries no decision either.
		ctx, cancelRun := context.WithCancel(f.ctx)
		defer cancelRun()
		var d domain.Decision
		first := func(context.Context) result {
			err := f.guard(func() (err error) {
				f.rep.called(CheckAdmitter)
				d, err = ca.AdmitCheck(ctx, c)
				return err
			})
			return result{err: err}
		}
		nothing := func(context.Context) result { return result{} }
		r, _, _ := f.pinnedRace(g, first, cancelRun, nothing)
		f.log.add("race: check %s via AdmitCheck, cancelled while it ran → %s, error: %v", f.log.check(c), describe(d), r.err)
		if r.err != nil {
			f.requireNoDecision(d, r.err, g, "AdmitCheck whose context was cancelled while it ran")
		}
	}
	if !closer {
		return
	}
	f.closeStore(f.inst.Store.(ports.Closer), g)
	if single {
		f.rep.called(CheckAdmitter)
		var d domain.Decision
		err := f.guard(func() (err error) {
			d, err = ca.AdmitCheck(f.ctx, c)
			return err
		})
		f.log.add("AdmitCheck(%s) on the closed store → %s, error: %v", f.log.check(c), describe(d), err)
		f.requireNoDecision(d, err, g, "AdmitCheck on a closed store")
	}
	if sr, ok := f.inst.Store.(ports.StatsReporter); ok {
		f.rep.called(StatsReporter)
		var st ports.Stats
		err := f.guard(func() (err error) {
			st, err = sr.Stats(f.ctx)
			return err
		})
		f.log.add("Stats on the closed store → %s, error: %v", describeStats(st, f.opts.Capacity), err)
		require.ErrorIs(t, err, ports.ErrClosed, "%s: Stats on a closed store fails with ports.ErrClosed", g)
		require.True(t, st.Entries == 0 && st.Capacity == 0 && st.Shards == 0 && len(st.Headroom) == 0,
			"%s: beside ports.ErrClosed, Stats returned a report (%s) instead of the zero Stats", g, describeStats(st, f.opts.Capacity))
	}
	if _, ok := f.inst.Store.(ports.Cleaner); ok {
		n, err := f.cleanupWith(f.ctx, "", 10)
		require.ErrorIs(t, err, ports.ErrClosed, "%s: CleanupExpired on a closed store fails with ports.ErrClosed", g)
		require.Zero(t, n, "%s: beside ports.ErrClosed, CleanupExpired reported %d removed", g, n)
	}
}

// invalidChecks are checks that Check.Validate refuses, each with a key the
// case made where it has one.
func (f *fixture) invalidChecks() []struct {
	name  string
	check domain.Check
} {
	return []struct {
		name  string
		check domain.Check
	}{
		{"the zero check", domain.Check{}},
		{"a check without a policy", domain.NewCheck(domain.Policy{}, f.key())},
		{"a check without a subject key", domain.NewCheck(f.policy(1, window), domain.SubjectKey{})},
	}
}

// testInvalidCheckBeforeContext hands AdmitCheck invalid checks with the
// case's context, a nil one and done ones: each must come back as the
// check's own error, the *domain.CheckError that Check.Validate returns
// (so that errors.As finds what is wrong with it), not a context error,
// as Admit reports Batch.Ready's error before its context.
func testInvalidCheckBeforeContext(t *testing.T, f *fixture) {
	const g = "results: AdmitCheck reports an invalid check with the check's own error (Check.Validate's *domain.CheckError, " +
		"matching domain.ErrInvalidCheck) before a nil or done context, as Admit reports Batch.Ready's error first"
	f.requireSinglePath()
	ca := f.inst.Store.(ports.CheckAdmitter)
	var nilCtx context.Context
	cancelled, cancel := context.WithCancel(f.ctx)
	cancel()
	expired, cancelExpired := context.WithDeadline(f.ctx, time.Unix(0, 0))
	defer cancelExpired()
	invalid := f.invalidChecks()
	for _, dc := range []struct {
		name string
		ctx  context.Context
	}{{"the case's ctx", f.ctx}, {"nil ctx", nilCtx}, {"cancelled ctx", cancelled}, {"ctx past its deadline", expired}} {
		for _, bad := range invalid {
			var want *domain.CheckError
			require.ErrorAs(t, bad.check.Validate(), &want, "harness: %s is invalid", bad.name)
			f.rep.called(CheckAdmitter)
			var d domain.Decision
			err := f.guard(func() (err error) {
				d, err = ca.AdmitCheck(dc.ctx, bad.check)
				return err
			})
			f.log.add("AdmitCheck(%s, %s) → %s, error: %v", dc.name, bad.name, describe(d), err)
			var pe *panicError
			require.False(t, errors.As(err, &pe), "%s (%s, %s): the store panicked: %v", g, bad.name, dc.name, err)
			require.Error(t, err, "%s (%s, %s): got %s", g, bad.name, dc.name, describe(d))
			var got *domain.CheckError
			require.ErrorAs(t, err, &got, "%s (%s, %s): the error (%v) is not the check's own", g, bad.name, dc.name, err)
			require.Equal(t, want.Problem, got.Problem, "%s (%s, %s): the error names another problem", g, bad.name, dc.name)
			require.ErrorIs(t, err, domain.ErrInvalidCheck, "%s (%s, %s)", g, bad.name, dc.name)
			require.False(t, ports.MayHaveConsumedQuota(err), "%s (%s, %s): an input error consumed nothing", g, bad.name, dc.name)
		}
	}
	p := f.policy(1, window)
	f.allowVia(f.check(p, f.key()), viaAdmitCheck, 0, g+" (the store still serves valid checks)")
}

// testBatchBeforeDoneContext hands Admit a batch that is not ready with a
// context that is already done: the store must report Batch.Ready's error,
// the first rule of ports.Store, not the context's.
func testBatchBeforeDoneContext(t *testing.T, f *fixture) {
	const g = "results: a batch that is not ready is reported before a done context (ports.Store: Batch.Ready first)"
	cancelled, cancel := context.WithCancel(f.ctx)
	cancel()
	expired, cancelExpired := context.WithDeadline(f.ctx, time.Unix(0, 0))
	defer cancelExpired()
	p, k := f.policy(2, window), f.key()
	driven, err := domain.NewBatch([]domain.Check{f.check(p, k)}, f.opts.MaxBatchSize)
	require.NoError(t, err, "harness: a batch of one")
	f.admitDirect(driven, "a batch of one", g)
	for _, dc := range []struct {
		name string
		ctx  context.Context
	}{{"cancelled ctx", cancelled}, {"ctx past its deadline", expired}} {
		f.requireReadyErrorFirst(g, dc.name, dc.ctx, dc.ctx.Err(), driven)
	}
	f.allow(f.check(p, k), 0, g+" (only the batch of one was counted)")
}

// testOpenStoreNeverClosed calls every method of an open store with a nil
// or done context: the errors are the caller's (ports.ErrNilContext, the
// context's own), and none matches ports.ErrClosed, which a host takes to
// mean that the store is gone for good.
func testOpenStoreNeverClosed(t *testing.T, f *fixture) {
	const g = "results: an open store never answers ports.ErrClosed: a nil or done context is the caller's own error, " +
		"not a closed store a host would shut down on"
	var nilCtx context.Context
	cancelled, cancel := context.WithCancel(f.ctx)
	cancel()
	expired, cancelExpired := context.WithDeadline(f.ctx, time.Unix(0, 0))
	defer cancelExpired()
	p, k := f.policy(2, window), f.key()
	requireNotClosed := func(call string, err error) {
		t.Helper()
		var pe *panicError
		require.False(t, errors.As(err, &pe), "%s (%s): the store panicked: %v", g, call, err)
		require.Error(t, err, "%s (%s): the call must fail", g, call)
		require.False(t, errors.Is(err, ports.ErrClosed), "%s (%s): the error matches ports.ErrClosed: %v", g, call, err)
	}
	for _, dc := range []struct {
		name string
		ctx  context.Context
	}{{"nil ctx", nilCtx}, {"cancelled ctx", cancelled}, {"ctx past its deadline", expired}} {
		b, err := domain.NewBatch([]domain.Check{f.check(p, k)}, f.opts.MaxBatchSize)
		require.NoError(t, err, "harness: a batch of one")
		f.admits.Add(1)
		f.rep.admits.Add(1)
		err = f.guard(func() error { return f.inst.Store.Admit(dc.ctx, b) })
		f.log.add("Admit(%s, batch [%s]) → error: %v", dc.name, f.log.check(f.check(p, k)), err)
		requireNotClosed("Admit with "+dc.name, err)
		if ca, ok := f.inst.Store.(ports.CheckAdmitter); ok {
			f.rep.called(CheckAdmitter)
			var d domain.Decision
			err := f.guard(func() (err error) {
				d, err = ca.AdmitCheck(dc.ctx, f.check(p, k))
				return err
			})
			f.log.add("AdmitCheck(%s, %s) → %s, error: %v", dc.name, f.log.check(f.check(p, k)), describe(d), err)
			requireNotClosed("AdmitCheck with "+dc.name, err)
		}
		if _, ok := f.inst.Store.(ports.Cleaner); ok {
			_, err := f.cleanupWith(dc.ctx, dc.name, 1)
			requireNotClosed("CleanupExpired with "+dc.name, err)
		}
		if rc, ok := f.inst.Store.(ports.ReadinessChecker); ok && dc.ctx != nil {
			err := f.guard(func() error { return rc.Ready(dc.ctx) })
			f.log.add("Ready(%s) → %v", dc.name, err)
			if err != nil {
				require.False(t, errors.Is(err, ports.ErrClosed), "%s (Ready with %s): the error matches ports.ErrClosed: %v",
					g, dc.name, err)
			}
		}
	}
	f.allow(f.check(p, k), 1, g+" (the store is open, and the refused calls consumed nothing)")

	// A cancellation that arrives while a batch runs, just after its clock
	// sample: the store may finish it or give up, with the context's
	// error, never with a closed store's.
	other := f.key()
	checks := []domain.Check{f.check(p, other), f.check(p, k)}
	ctx, cancelRun := context.WithCancel(f.ctx)
	defer cancelRun()
	first := func(context.Context) result { return f.batchOp(checks)(ctx) }
	nothing := func(context.Context) result { return result{} }
	r, _, _ := f.pinnedRace(g, first, cancelRun, nothing)
	f.log.add("race: batch %s via Admit, cancelled while it ran → %s", f.log.batch(checks), describeResult(r))
	if r.err != nil {
		requireNotClosed("a batch whose context was cancelled while it ran", r.err)
	}
}
