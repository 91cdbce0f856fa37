package conformance

import (
	"math"
	"testing"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// windowsScenario checks the anchored fixed window: the first allowed check
// starts it, later checks count in it until it ends, and it ends exactly
// window after its start.
func windowsScenario() scenario {
	return scenario{name: "windows", cases: []testCase{
		{name: "exact_remaining_and_reset", run: testExactRemainingAndReset},
		{name: "denial_retry_after", run: testDenialRetryAfter},
		{name: "renewal_exactly_at_expiry", run: testRenewalExactlyAtExpiry},
		{name: "counters_independent_per_fingerprint", run: testCountersIndependent},
		{name: "cost_above_one", run: testCostAboveOne},
		{name: "largest_limit_and_window", run: testLargestLimitAndWindow},
	}}
}

func testExactRemainingAndReset(t *testing.T, f *fixture) {
	const g = "windows: an allowed check reports the units left and the time until its window ends"
	p, k := f.policy(3, window), f.key()
	a := f.allow(f.check(p, k), 2, g)
	f.requireDuration(window, a.ResetAfter, g+" (first check anchors a full window)")
	f.advance(10 * time.Minute)
	a = f.allow(f.check(p, k), 1, g)
	f.requireDuration(window-10*time.Minute, a.ResetAfter, g+" (the window stays anchored at the first check)")
	f.advance(20 * time.Minute)
	a = f.allow(f.check(p, k), 0, g)
	f.requireDuration(window-30*time.Minute, a.ResetAfter, g+" (the last unit)")
}

func testDenialRetryAfter(t *testing.T, f *fixture) {
	const g = "windows: a quota denial says when the window ends"
	p, k := f.policy(2, window), f.key()
	f.allow(f.check(p, k), 1, g)
	f.allow(f.check(p, k), 0, g)
	f.advance(15 * time.Minute)
	d := f.deny(f.check(p, k), domain.QuotaExhausted, g)
	f.requireRetry(d, window-15*time.Minute, g)
}

func testRenewalExactlyAtExpiry(t *testing.T, f *fixture) {
	const g = "windows: a window ends exactly window after its first check, not a millisecond earlier or later"
	p, k := f.policy(1, window), f.key()
	f.allow(f.check(p, k), 0, g)
	if f.inst.ExactTime {
		f.advance(window - time.Millisecond)
		d := f.deny(f.check(p, k), domain.QuotaExhausted, g+" (one millisecond before the end the window is still active)")
		f.requireRetry(d, time.Millisecond, g)
		f.advance(time.Millisecond)
	} else {
		// A running clock cannot stop one millisecond short of the end;
		// half way through the window is still certainly inside it.
		f.advance(window / 2)
		d := f.deny(f.check(p, k), domain.QuotaExhausted, g+" (half way through the window is still active)")
		f.requireRetry(d, window/2, g)
		f.advance(window / 2)
	}
	a := f.allow(f.check(p, k), 0, g+" (at its end the window renews)")
	f.requireDuration(window, a.ResetAfter, g+" (a renewed window is anchored at the renewing check)")
	d := f.deny(f.check(p, k), domain.QuotaExhausted, g+" (the renewed window counts from its new anchor)")
	f.requireRetry(d, window, g)
}

func testCountersIndependent(t *testing.T, f *fixture) {
	const g = "windows: policy id, scope, limit, window and subject each select an independent counter"
	base := f.policyOf("conformance.base", "scope-a", 2, window)
	k := f.key()
	f.allow(f.check(base, k), 1, g)
	f.allow(f.check(base, k), 0, g)
	f.deny(f.check(base, k), domain.QuotaExhausted, g+" (the base counter is exhausted)")

	for _, other := range []struct {
		name string
		p    domain.Policy
	}{
		{"another policy id", f.policyOf("conformance.other", "scope-a", 2, window)},
		{"another scope", f.policyOf("conformance.base", "scope-b", 2, window)},
		{"another limit", f.policyOf("conformance.base", "scope-a", 3, window)},
		{"another window", f.policyOf("conformance.base", "scope-a", 2, window+time.Millisecond)},
	} {
		f.allow(f.check(other.p, k), other.p.Limit()-1, g+" ("+other.name+", same subject)")
	}
	f.allow(f.check(base, f.key()), 1, g+" (another subject, same policy)")
	f.deny(f.check(base, k), domain.QuotaExhausted, g+" (the others left the base counter as it was)")
}

func testCostAboveOne(t *testing.T, f *fixture) {
	const g = "windows: a check consumes its cost, and is denied whole when fewer units are left"
	p, k := f.policy(10, window), f.key()
	f.allow(f.checkCost(p, k, 4), 6, g)
	f.allow(f.checkCost(p, k, 4), 2, g)
	d := f.deny(f.checkCost(p, k, 3), domain.QuotaExhausted, g+" (cost 3 with 2 left)")
	f.requireRetry(d, window, g)
	f.allow(f.checkCost(p, k, 2), 0, g+" (cost 2 with 2 left)")
	f.allow(f.checkCost(p, f.key(), 10), 0, g+" (cost equal to the limit on a fresh window)")
}

func testLargestLimitAndWindow(t *testing.T, f *fixture) {
	const g = "windows: the largest limit and window are stored and counted exactly"
	p := f.policy(domain.MaxLimit, domain.MaxWindow)
	k := f.key()
	a := f.allow(f.check(p, k), math.MaxInt64-1, g)
	f.requireDuration(domain.MaxWindow, a.ResetAfter, g)
	f.allow(f.checkCost(p, k, domain.MaxLimit-1), 0, g+" (the rest of the largest limit)")
	d := f.deny(f.check(p, k), domain.QuotaExhausted, g+" (the largest limit is exhausted)")
	f.requireRetry(d, domain.MaxWindow, g)

	full := f.key()
	f.allow(f.checkCost(p, full, domain.MaxLimit), 0, g+" (the largest cost at once)")
	f.advance(domain.MaxWindow)
	a = f.allow(f.check(p, k), math.MaxInt64-1, g+" (the largest window ends and renews)")
	f.requireDuration(domain.MaxWindow, a.ResetAfter, g)
	f.allow(f.checkCost(p, full, domain.MaxLimit), 0, g+" (the largest window ends and renews)")
}
