package conformance

import (
	"testing"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// tiersScenario checks the counters of one subject under policy tiers: two
// policies with one policy id and one scope that differ only in limit or
// window (a burst tier of a minute beside a sustained tier of an hour is
// the usual shape). A subject key is derived from the policy id, the scope
// and the subject alone (SPEC section 2), so both tiers give the subject
// one and the same subject key, and only the fingerprints, the first half
// of their counter keys, tell the two counters apart.
//
// A store that orders a batch's locks by subject key alone (a SQL store's
// SELECT ... ORDER BY subject_key FOR UPDATE, whose table's primary key
// starts with the fingerprint) finds the two tiers' keys equal and takes
// them in the caller's order: two batches naming both tiers in opposite
// orders then deadlock, each holding the lock the other waits for.
func tiersScenario() scenario {
	return scenario{name: "tiers", cases: []testCase{
		{name: "opposite_order_batches_of_one_subject_under_two_tiers_do_not_deadlock", run: testTiersOppositeOrder},
	}}
}

// testTiersOppositeOrder races batch [a, b] and batch [b, a], a and b one
// subject's counters under two tiers, after two single-key batches of a
// and of b, each held in the clock read until both batches wait on them
// (see raceHeldBatches). Released together, the holders hand a to one
// batch and b to the other when the store takes them in the caller's
// order, and both batches then wait for ever; a store that locks in
// counter-key order (fingerprint, then subject key) makes both batches
// wait for the same first key instead. Fresh subjects every round.
func testTiersOppositeOrder(t *testing.T, f *fixture) {
	const g = "tiers: two batches naming one subject under two tiers of a policy (one policy id and scope, so one " +
		"subject key) in opposite orders do not deadlock: a batch locks its keys in counter-key order, fingerprint " +
		"first, never by subject key alone"
	const rounds, limit = 2, 100
	burst, sustained := f.policy(limit, time.Minute), f.policy(limit, window)
	for round := range rounds {
		k := f.key()
		ab := []domain.Check{f.check(burst, k), f.check(sustained, k)}
		ba := []domain.Check{f.check(sustained, k), f.check(burst, k)}
		f.raceHeldBatches(t, g, round, [2]string{"burst", "sustained"}, ab, [2]string{"sustained", "burst"}, ba)
		// Each counter was charged three times: its holder and both batches.
		f.allow(f.checkCost(burst, k, limit-3), 0, g+" (every batch charged the burst tier once)")
		f.allow(f.checkCost(sustained, k, limit-3), 0, g+" (every batch charged the sustained tier once)")
	}
}
