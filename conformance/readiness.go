package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// readinessScenario checks [ports.ReadinessChecker] on stores that offer
// it. A readiness probe runs every few seconds for as long as the host
// lives, so a probe that admits a check of its own (a "canary" key, to
// prove the whole path works) fills a capacity slot the hosts' keys were
// promised, and a probe that answers ready after Close keeps a draining
// host in its load balancer's rotation while every admission fails.
func readinessScenario() scenario {
	return scenario{name: "readiness", cases: []testCase{
		{name: "ready_consumes_nothing", opts: capacityOptions, run: testReadyConsumesNothing},
		{name: "closed_store_is_not_ready", run: testClosedStoreNotReady},
	}}
}

// readiness returns the store's readiness probe, skipping the case when it
// has none.
func (f *fixture) readiness() ports.ReadinessChecker {
	f.t.Helper()
	rc, ok := f.inst.Store.(ports.ReadinessChecker)
	if !ok {
		f.skip("readiness: the store does not implement ports.ReadinessChecker")
	}
	return rc
}

// ready calls the store's Ready and logs its answer.
func (f *fixture) ready(rc ports.ReadinessChecker) error {
	f.t.Helper()
	err := f.guard(func() error { return rc.Ready(f.ctx) })
	f.log.add("Ready → error: %v", err)
	return err
}

// testReadyConsumesNothing probes a fresh store several times: a key
// counted before the probes keeps its count, Stats (when offered) shows
// only the case's counter, and the partitions (the case's, or every one
// when the store reports no Stats) still hold exactly Capacity of the
// case's keys.
func testReadyConsumesNothing(t *testing.T, f *fixture) {
	const g = "readiness: Ready consumes no quota and takes no capacity slot (ports.ReadinessChecker)"
	rc := f.readiness()
	p := f.policy(3, window)
	part := f.somePart(p)
	k := f.keyIn(p, part)
	f.allow(f.check(p, k), 2, g)
	for range 3 {
		require.NoError(t, f.ready(rc), "%s: a fresh store that serves admissions is ready", g)
	}
	f.allow(f.check(p, k), 1, g+" (the probes left the case's counter as it was)")
	want := occupancy{part: 1}
	parts := []int{part}
	if _, ok := f.stats(); ok {
		// Stats shows a probe's counter wherever it landed.
		f.requireOccupancy(want, g)
	} else {
		parts = make([]int, f.parts)
		for q := range parts {
			parts[q] = q
		}
	}
	for _, q := range parts {
		n := f.opts.Capacity - want[q]
		f.admitNew(p, q, n, g+" (every slot is still free for the case's keys)")
		want[q] += n
	}
	f.requireOccupancy(want, g)
	for _, q := range parts {
		f.deny(f.check(p, f.keyIn(p, q)), domain.StorageCapacity, g+" (the partition holds exactly Capacity counters)")
	}
}

// testClosedStoreNotReady closes a store that offers ports.Closer and
// probes it: Ready must fail with an error matching ports.ErrClosed.
func testClosedStoreNotReady(t *testing.T, f *fixture) {
	const g = "readiness: after Close, Ready fails with an error matching ports.ErrClosed (ports.ReadinessChecker)"
	rc := f.readiness()
	c, ok := f.inst.Store.(ports.Closer)
	if !ok {
		f.skip("readiness: the store does not implement ports.Closer")
	}
	require.NoError(t, f.ready(rc), "%s: a fresh store that serves admissions is ready", g)
	f.closeStore(c, g)
	err := f.ready(rc)
	require.Error(t, err, "%s: Ready answered ready on a closed store, whose every admission fails", g)
	require.ErrorIs(t, err, ports.ErrClosed, "%s", g)
}
