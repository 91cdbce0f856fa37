package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// shadowScenario checks shadow mode: a shadow policy counts like an enforced
// one, reports the denials it would make while letting the request through,
// and shares its counter with the enforced policy.
func shadowScenario() scenario {
	return scenario{name: "shadow", cases: []testCase{
		{name: "counter_warms", single: true, run: testShadowCounterWarms},
		{name: "denial_permits_and_consumes_nothing", single: true, run: testShadowDenial},
		{name: "capacity_denial_never_shadowed", single: true, opts: capacityOptions, run: testCapacityNeverShadowed},
		{name: "switching_to_enforce_keeps_the_counter", single: true, run: testShadowSwitch},
	}}
}

func testShadowCounterWarms(t *testing.T, f *fixture) {
	const g = "shadow: a shadow policy counts allowed checks like an enforced one"
	p, k := f.shadow(f.policy(3, window)), f.key()
	f.allow(f.check(p, k), 2, g)
	f.advance(window / 4)
	f.allow(f.check(p, k), 1, g)
	a := f.allow(f.check(p, k), 0, g)
	f.requireDuration(window-window/4, a.ResetAfter, g+" (the shadow window is anchored like an enforced one)")
}

func testShadowDenial(t *testing.T, f *fixture) {
	const g = "shadow: over the limit a shadow policy reports a denial, lets the request through and consumes nothing"
	p, k := f.shadow(f.policy(4, window)), f.key()
	f.allow(f.checkCost(p, k, 3), 1, g)
	f.advance(window / 4)
	for range 2 {
		d := f.decide(f.checkCost(p, k, 2), g)
		require.Equal(t, domain.ShadowDenied, d.Outcome(), "%s: got %s", g, describe(d))
		require.True(t, d.PermitsRequest(), "%s: a shadow denial permits the request", g)
		den, _ := d.Denial()
		require.Equal(t, domain.QuotaExhausted, den.Reason(), "%s", g)
		f.requireRetry(den, window-window/4, g)
	}
	f.allow(f.check(p, k), 0, g+" (the unit left before the shadow denials is still there)")
}

func testCapacityNeverShadowed(t *testing.T, f *fixture) {
	const g = "shadow: a storage-capacity denial is enforced even for a shadow policy"
	p := f.shadow(f.policy(2, window))
	part := f.somePart(p)
	f.fillPartition(p, part, g)
	refused := f.keyIn(p, part)
	d := f.decide(f.check(p, refused), g)
	den, _ := d.Denial()
	require.False(t, d.PermitsRequest(), "%s: got %s", g, describe(d))
	require.Equal(t, domain.StorageCapacity, den.Reason(), "%s: got %s", g, describe(d))
	bd := f.admit([]domain.Check{f.check(p, f.key()), f.check(p, refused)}, g+" (in a batch)")
	require.False(t, bd.PermitsRequest(), "%s: got %s", g, describeBatch(bd))
	f.requireOccupancy(occupancy{part: f.opts.Capacity}, g+" (the refused shadow key holds no slot)")
}

func testShadowSwitch(t *testing.T, f *fixture) {
	const g = "shadow: mode is not part of the counter, so switching modes keeps the count"
	enforce := f.policy(3, window)
	shadow, k := f.shadow(enforce), f.key()
	f.allow(f.check(shadow, k), 2, g)
	f.allow(f.check(shadow, k), 1, g)
	f.allow(f.check(enforce, k), 0, g+" (enforce continues the shadow count)")
	f.deny(f.check(enforce, k), domain.QuotaExhausted, g+" (enforce denies what shadow counted)")
	f.refuse(f.check(shadow, k), domain.ShadowDenied, domain.QuotaExhausted, g+" (and back to shadow)")
}
