package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// denialsScenario checks that no kind of denial consumes anything: not a
// quota denial, not a storage-capacity denial, not a shadow denial.
func denialsScenario() scenario {
	return scenario{name: "denials", cases: []testCase{
		{name: "quota", single: true, run: testQuotaDenialConsumesNothing},
		{name: "storage_capacity", single: true, opts: capacityOptions, run: testCapacityDenialConsumesNothing},
		{name: "shadow", single: true, run: testShadowDenialConsumesNothing},
		{name: "a_quota_denial_lasts_only_until_the_window_ends", single: true, run: testQuotaDenialEndsWithWindow},
	}}
}

func testQuotaDenialConsumesNothing(t *testing.T, f *fixture) {
	const g = "denials: a quota denial consumes nothing"
	p, k := f.policy(5, window), f.key()
	f.allow(f.checkCost(p, k, 3), 2, g)
	for range 3 {
		f.deny(f.checkCost(p, k, 3), domain.QuotaExhausted, g+" (cost 3 with 2 left)")
	}
	f.allow(f.checkCost(p, k, 2), 0, g+" (the 2 units left by the denials are still there)")
}

func testCapacityDenialConsumesNothing(t *testing.T, f *fixture) {
	const g = "denials: a storage-capacity denial stores nothing"
	p := f.policy(2, window)
	part := f.somePart(p)
	held := f.fillPartition(p, part, g)
	refused := f.keyIn(p, part)
	for range 3 {
		f.deny(f.check(p, refused), domain.StorageCapacity, g+" (the refused key is still absent and its partition still full)")
	}
	f.requireOccupancy(occupancy{part: f.opts.Capacity}, g+" (the refused key holds no slot)")
	f.allow(f.check(p, held[0]), 0, g+" (the admitted keys kept their counts)")
}

func testShadowDenialConsumesNothing(t *testing.T, f *fixture) {
	const g = "denials: a shadow denial consumes nothing, in a batch as alone"
	p := f.shadow(f.policy(5, window))
	k, fresh := f.key(), f.key()
	f.allow(f.checkCost(p, k, 3), 2, g)
	f.refuse(f.checkCost(p, k, 3), domain.ShadowDenied, domain.QuotaExhausted, g+" (cost 3 with 2 left)")

	bd := f.admit([]domain.Check{f.check(p, fresh), f.checkCost(p, k, 3)}, g)
	require.Equal(t, domain.ShadowDenied, bd.Outcome(), "%s: got %s", g, describeBatch(bd))
	require.True(t, bd.PermitsRequest(), "%s: a shadow denial lets the request through", g)
	i, _, _ := bd.Denied()
	require.Equal(t, 1, i, "%s: the shadow denial names the exhausted check", g)

	f.allow(f.checkCost(p, k, 2), 0, g+" (the 2 units left by the denials are still there)")
	f.allow(f.check(p, fresh), 4, g+" (the other check of the shadow-denied batch consumed nothing)")
}

// testQuotaDenialEndsWithWindow refuses a check a fraction of a second
// before its window ends, so that its Retry-After in whole seconds reaches
// past that end, and requires the very same check to be allowed at the
// end: a store that remembers the refusal (a local "denied until reset"
// note) must forget it when the window does, not when Retry-After's whole
// seconds run out.
func testQuotaDenialEndsWithWindow(t *testing.T, f *fixture) {
	const g = "denials: a quota denial lasts only until its window ends"
	const w, early = 1500 * time.Millisecond, 100 * time.Millisecond
	p, k := f.policy(2, w), f.key()
	f.allow(f.checkCost(p, k, 2), 0, g)
	f.advance(early)
	d := f.deny(f.checkCost(p, k, 2), domain.QuotaExhausted, g+" (the window is spent)")
	f.requireRetry(d, w-early, g+" (retry when the window ends)")
	f.advance(w - early)
	f.allow(f.checkCost(p, k, 2), 0, g+" (the same check, at the window's end, opens a new window)")
}
