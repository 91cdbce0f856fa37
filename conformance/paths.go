package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// pathsScenario checks that a store's two ways of applying a check agree:
// AdmitCheck ([ports.CheckAdmitter]), which limiters take for every single
// check, and Admit, which they take for every batch. Each case interleaves
// the two on the same counters, so a store whose paths keep separate
// state, read different clocks or apply different rules is caught. (Every
// single-check case also runs once per path; these cases prove that the two
// share one truth.)
func pathsScenario() scenario {
	return scenario{name: "paths", cases: []testCase{
		{name: "single_check_and_batch_of_one_share_a_counter", run: testPathsShareACounter},
		{name: "single_check_and_batch_of_one_agree_on_capacity", opts: capacityOptions, run: testPathsAgreeOnCapacity},
		{name: "invalid_single_check_is_an_error", run: testInvalidSingleCheck},
	}}
}

func (f *fixture) requireSinglePath() {
	f.t.Helper()
	if !f.caps.has[CheckAdmitter] {
		f.skip("paths: the store has no single-check path (ports.CheckAdmitter): Admit serves every check")
	}
}

func testPathsShareACounter(t *testing.T, f *fixture) {
	const g = "paths: AdmitCheck and Admit count one counter, decide alike and anchor alike"
	f.requireSinglePath()
	p := f.policy(6, window)
	k, other := f.key(), f.key()
	a := f.allowVia(f.check(p, k), viaAdmitCheck, 5, g+" (AdmitCheck anchors the window)")
	f.requireDuration(window, a.ResetAfter, g)
	f.allowVia(f.check(p, k), viaBatchOfOne, 4, g+" (a batch of one sees the single check's unit)")
	rem := f.admitAllowed([]domain.Check{f.check(p, other), f.check(p, k)}, g+" (a batch of two sees both)")
	require.Equal(t, []int64{5, 3}, rem, "%s: remaining units after the batch of two", g)
	f.advance(10 * time.Minute)
	a = f.allowVia(f.checkCost(p, k, 3), viaAdmitCheck, 0, g+" (AdmitCheck sees the batches' units)")
	f.requireDuration(window-10*time.Minute, a.ResetAfter, g+" (AdmitCheck reads the window the batches kept)")

	single := f.refuseVia(f.check(p, k), viaAdmitCheck, domain.Denied, domain.QuotaExhausted, g)
	batch := f.refuseVia(f.check(p, k), viaBatchOfOne, domain.Denied, domain.QuotaExhausted, g)
	f.requireRetry(single, window-10*time.Minute, g+" (AdmitCheck's retry time)")
	f.requireRetry(batch, window-10*time.Minute, g+" (a batch of one's retry time)")
	f.admitDenied([]domain.Check{f.check(p, other), f.check(p, k)}, 1, domain.QuotaExhausted, g+" (and a batch of two)")

	f.advance(window - 10*time.Minute)
	a = f.allowVia(f.check(p, k), viaAdmitCheck, 5, g+" (AdmitCheck renews the expired window)")
	f.requireDuration(window, a.ResetAfter, g)
	f.allowVia(f.check(p, k), viaBatchOfOne, 4, g+" (a batch of one counts in the renewed window)")
	f.allowVia(f.check(p, other), viaBatchOfOne, 5, g+" (a batch of one renews the other expired window)")
	f.allowVia(f.check(p, other), viaAdmitCheck, 4, g+" (AdmitCheck counts in it)")
}

func testPathsAgreeOnCapacity(t *testing.T, f *fixture) {
	const g = "paths: AdmitCheck and Admit share the capacity bound"
	f.requireSinglePath()
	p := f.policy(2, window)
	part := f.somePart(p)
	held := f.keysIn(p, part, f.opts.Capacity)
	for i, k := range held {
		via := viaAdmitCheck
		if i%2 == 1 {
			via = viaBatchOfOne
		}
		f.allowVia(f.check(p, k), via, 1, g+" (filling the partition through both paths)")
	}
	refused := f.keyIn(p, part)
	single := f.refuseVia(f.check(p, refused), viaAdmitCheck, domain.Denied, domain.StorageCapacity, g+" (AdmitCheck sees the full partition)")
	batch := f.refuseVia(f.check(p, refused), viaBatchOfOne, domain.Denied, domain.StorageCapacity, g+" (a batch of one sees the full partition)")
	sr, sok := single.RetryAfter()
	br, bok := batch.RetryAfter()
	if f.inst.ExactTime {
		require.Equal(t, sok, bok, "%s: both paths give a retry time for a capacity denial, or neither", g)
		require.Equal(t, sr, br, "%s: both paths give the same retry time for a capacity denial", g)
	}
	f.requireOccupancy(occupancy{part: f.opts.Capacity}, g)

	f.advance(window)
	for i, k := range held {
		via := viaBatchOfOne
		if i%2 == 1 {
			via = viaAdmitCheck
		}
		a := f.allowVia(f.check(p, k), via, 1, g+" (each path renews an expired key in its own slot)")
		f.requireDuration(window, a.ResetAfter, g)
	}
	f.refuseVia(f.check(p, refused), viaAdmitCheck, domain.Denied, domain.StorageCapacity, g+" (the renewed keys fill the partition again)")
}

func testInvalidSingleCheck(t *testing.T, f *fixture) {
	const g = "paths: AdmitCheck rejects an invalid check with an input error, before touching any counter"
	f.requireSinglePath()
	s := f.inst.Store.(ports.CheckAdmitter)
	for _, bad := range []struct {
		name  string
		check domain.Check
	}{
		{"the zero check", domain.Check{}},
		{"a check without a policy", domain.NewCheck(domain.Policy{}, f.key())},
		{"a check without a subject key", domain.NewCheck(f.policy(1, window), domain.SubjectKey{})},
	} {
		f.rep.called(CheckAdmitter)
		var d domain.Decision
		err := f.guard(func() (err error) {
			d, err = s.AdmitCheck(f.ctx, bad.check)
			return err
		})
		f.log.add("AdmitCheck(%s) → %s, error: %v", bad.name, describe(d), err)
		require.ErrorIs(t, err, domain.ErrInvalidInput, "%s (%s): got %s", g, bad.name, describe(d))
		require.False(t, ports.MayHaveConsumedQuota(err), "%s (%s): an input error consumed nothing", g, bad.name)
	}
	p := f.policy(1, window)
	f.allow(f.check(p, f.key()), 0, g+" (the store still serves valid checks)")
}
