package conformance

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// windowsScenario checks the anchored fixed window: the first allowed check
// starts it, later checks count in it until it ends, and it ends exactly
// window after its start. Counts and times are stored without loss.
func windowsScenario() scenario {
	return scenario{name: "windows", cases: []testCase{
		{name: "exact_remaining_and_reset", single: true, run: testExactRemainingAndReset},
		{name: "denial_retry_after", single: true, run: testDenialRetryAfter},
		{name: "renewal_exactly_at_expiry", single: true, run: testRenewalExactlyAtExpiry},
		{name: "renewal_after_expiry_anchors_at_the_renewing_check", single: true, run: testRenewalAnchorsAtRenewingCheck},
		{name: "short_windows_are_exact", single: true, run: testShortWindows},
		{name: "counters_independent_per_fingerprint", single: true, run: testCountersIndependent},
		{name: "cost_above_one", single: true, run: testCostAboveOne},
		{name: "counts_beyond_32_and_53_bits_are_exact", single: true, run: testLargeCounts},
		{name: "largest_limit_and_window", single: true, run: testLargestLimitAndWindow},
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
	f.advance(20*time.Minute + 7*time.Millisecond)
	a = f.allow(f.check(p, k), 0, g)
	f.requireDuration(window-30*time.Minute-7*time.Millisecond, a.ResetAfter, g+" (the last unit)")
}

func testDenialRetryAfter(t *testing.T, f *fixture) {
	const g = "windows: a quota denial says when the window ends"
	p, k := f.policy(2, window), f.key()
	f.allow(f.check(p, k), 1, g)
	f.allow(f.check(p, k), 0, g)
	f.advance(15*time.Minute + 3*time.Millisecond)
	d := f.deny(f.check(p, k), domain.QuotaExhausted, g)
	f.requireRetry(d, window-15*time.Minute-3*time.Millisecond, g)
}

func testRenewalExactlyAtExpiry(t *testing.T, f *fixture) {
	const g = "windows: a window is half-open: it ends exactly window after its first check, not a millisecond earlier or later"
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

func testRenewalAnchorsAtRenewingCheck(t *testing.T, f *fixture) {
	const g = "windows: a window renewed after its end is anchored at the renewing check, not at the old end"
	const late = 17*time.Minute + 3*time.Second + 456*time.Millisecond
	p, k := f.policy(2, window), f.key()
	f.allow(f.check(p, k), 1, g)
	f.advance(window + late)
	a := f.allow(f.check(p, k), 1, g+" (the old window ended long ago: a fresh count)")
	f.requireDuration(window, a.ResetAfter, g)
	f.advance(window - late)
	a = f.allow(f.check(p, k), 0, g+" (still inside the renewed window, which ends a full window after the renewal)")
	f.requireDuration(late, a.ResetAfter, g)
	d := f.deny(f.check(p, k), domain.QuotaExhausted, g)
	f.requireRetry(d, late, g)
	f.advance(late)
	a = f.allow(f.check(p, k), 1, g+" (the renewed window ends exactly a window after the renewal)")
	f.requireDuration(window, a.ResetAfter, g)
}

func testShortWindows(t *testing.T, f *fixture) {
	const g = "windows: windows of a millisecond and of a second and a half keep their exact length"
	if !f.inst.ExactTime {
		f.skip("windows: a clock that keeps running ends a millisecond window by itself; needs an exact clock")
	}
	ms := f.policy(1, time.Millisecond)
	k := f.key()
	a := f.allow(f.check(ms, k), 0, g)
	f.requireDuration(time.Millisecond, a.ResetAfter, g+" (a 1 ms window)")
	d := f.deny(f.check(ms, k), domain.QuotaExhausted, g+" (a 1 ms window)")
	f.requireRetry(d, time.Millisecond, g+" (a 1 ms window)")
	f.advance(time.Millisecond)
	a = f.allow(f.check(ms, k), 0, g+" (a 1 ms window renews after 1 ms)")
	f.requireDuration(time.Millisecond, a.ResetAfter, g)

	mid := f.policy(2, 1500*time.Millisecond)
	a = f.allow(f.check(mid, k), 1, g)
	f.requireDuration(1500*time.Millisecond, a.ResetAfter, g+" (a 1.5 s window)")
	f.advance(1499 * time.Millisecond)
	a = f.allow(f.check(mid, k), 0, g+" (1.499 s into a 1.5 s window)")
	f.requireDuration(time.Millisecond, a.ResetAfter, g)
	f.advance(time.Millisecond)
	a = f.allow(f.check(mid, k), 1, g+" (a 1.5 s window renews after 1.5 s)")
	f.requireDuration(1500*time.Millisecond, a.ResetAfter, g)
}

func testCountersIndependent(t *testing.T, f *fixture) {
	const g = "windows: policy id, scope, limit, window and subject each select an independent counter"
	base := f.policyOf("conformance.base", "scope-a", 2, window)
	k := f.key()
	f.allow(f.check(base, k), 1, g)
	f.allow(f.check(base, k), 0, g)
	f.deny(f.check(base, k), domain.QuotaExhausted, g+" (the base counter is exhausted)")

	// Each other policy differs from base in one field, chosen so that its
	// counter for k lands in base's partition: a sharded store that keys
	// its counters without that field, but picks the shard by the whole
	// counter key, conflates the two only inside one partition.
	home := f.partOf(base, k)
	for _, other := range []struct {
		name string
		p    func(n int) (domain.Policy, error)
	}{
		{"another policy id", func(n int) (domain.Policy, error) {
			return domain.ParsePolicy(fmt.Sprintf("conformance.other%d", n), "scope-a", 2, window)
		}},
		{"another scope", func(n int) (domain.Policy, error) {
			return domain.ParsePolicy("conformance.base", fmt.Sprintf("scope-b%d", n), 2, window)
		}},
		{"another limit", func(n int) (domain.Policy, error) {
			return domain.ParsePolicy("conformance.base", "scope-a", int64(3+n), window)
		}},
		{"another window", func(n int) (domain.Policy, error) {
			return domain.ParsePolicy("conformance.base", "scope-a", 2, window+time.Duration(1+n)*time.Millisecond)
		}},
	} {
		p := f.policyNear(other.p, k, home)
		f.allow(f.check(p, k), p.Limit()-1, g+" ("+other.name+", same subject)")
	}
	f.allow(f.check(base, f.key()), 1, g+" (another subject, same policy)")
	f.deny(f.check(base, k), domain.QuotaExhausted, g+" (the others left the base counter as it was)")
}

// policyNear returns the first policy of(0), of(1), ... whose counter for k
// lies in partition part, or of(0) when none of the first 16,384 does.
// (With PostgreSQL's 256 ledger shards one in 256 does.)
func (f *fixture) policyNear(of func(n int) (domain.Policy, error), k domain.SubjectKey, part int) domain.Policy {
	f.t.Helper()
	var chosen domain.Policy
	for n := range 1 << 14 {
		p, err := of(n)
		require.NoError(f.t, err, "harness: a policy")
		if n == 0 {
			chosen = p
		}
		if f.partOf(p, k) == part {
			chosen = p
			break
		}
	}
	f.log.namePolicy(chosen)
	return chosen
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

// testLargeCounts walks a counter through values that a store keeping
// counts in 32 bits, or in a float64 (a JSON number, a Lua number, a
// double column), cannot hold: above 2^31 and 2^32, and an odd count above
// 2^53.
func testLargeCounts(t *testing.T, f *fixture) {
	const g = "windows: counts above 2^31, 2^32 and 2^53 are stored exactly"
	p, k := f.policy(domain.MaxLimit, window), f.key()
	used := int64(0)
	for _, cost := range []int64{1<<31 + 1, 1 << 32, 1 << 53, 1, 2} {
		used += cost
		f.allow(f.checkCost(p, k, cost), domain.MaxLimit-used, g)
	}
	f.allow(f.checkCost(p, k, domain.MaxLimit-used), 0, g+" (the rest of the limit, to the unit)")
	f.deny(f.check(p, k), domain.QuotaExhausted, g+" (nothing left)")
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
	// A millisecond before the end on an exact clock; a running clock needs
	// more room, or the window would end by itself.
	edge := time.Millisecond
	if !f.inst.ExactTime {
		edge = time.Minute
	}
	f.advance(domain.MaxWindow - edge)
	d = f.deny(f.check(p, k), domain.QuotaExhausted, g+" (just before the largest window ends)")
	f.requireRetry(d, edge, g)
	f.advance(edge)
	a = f.allow(f.check(p, k), math.MaxInt64-1, g+" (the largest window ends and renews)")
	f.requireDuration(domain.MaxWindow, a.ResetAfter, g)
	f.allow(f.checkCost(p, full, domain.MaxLimit), 0, g+" (the largest window ends and renews)")
	// The renewed windows end two largest windows after the clock's zero,
	// past what a time.Time holds in Unix nanoseconds (year 2262): read
	// them back, so a store that keeps its times as UnixNano (a Redis
	// score, an int64 column) shows the overflow here, as it would in
	// production for any window ending after 2262.
	f.allow(f.checkCost(p, k, domain.MaxLimit-1), 0, g+" (the renewed largest window, read back, counts on)")
	d = f.deny(f.check(p, k), domain.QuotaExhausted, g+" (the renewed largest window, read back, is exhausted)")
	f.requireRetry(d, domain.MaxWindow, g+" (the renewed largest window, read back)")
	d = f.deny(f.check(p, full), domain.QuotaExhausted, g+" (the renewed largest cost, read back)")
	f.requireRetry(d, domain.MaxWindow, g+" (the renewed largest cost, read back)")
}
