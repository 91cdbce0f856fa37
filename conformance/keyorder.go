package conformance

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// keyOrderScenario checks that a batch writes each key's new count to that
// key, whatever order the store locks or reads the keys in (SPEC section
// 3: persist the new states of the batch; ports.Store: persist
// Batch.Next for every check).
//
// A store that sorts a batch's keys for its lock order must map each
// sorted position back to its caller index. A swap of two keys is its own
// inverse, so a store that maps through the permutation's inverse instead
// is right for every batch of two keys and every batch already in key
// order, and moves the counts of three keys around a cycle: the
// decisions it returns are right, and the next checks find each key
// holding another's count.
func keyOrderScenario() scenario {
	return scenario{name: "keyorder", cases: []testCase{
		{name: "a_batch_in_cyclic_key_order_writes_each_key_its_own_count", run: testCyclicKeyOrder},
	}}
}

func testCyclicKeyOrder(t *testing.T, f *fixture) {
	const g = "keyorder: a batch whose caller order is a cycle of its keys' byte order writes each key its own count " +
		"(a store that maps its sorted keys back through the inverse permutation swaps counts between keys)"
	const limit = 20
	p := f.policy(limit, window)
	ks := f.keys(3)
	key := func(k domain.SubjectKey) domain.CounterKey { return domain.NewCounterKey(p.Fingerprint(), k) }
	slices.SortFunc(ks, func(a, b domain.SubjectKey) int { k1, k2 := key(a), key(b); return k1.Compare(k2) })
	// used[i] is what sorted key i holds: distinct counts, so a count
	// written to the wrong key shows.
	used := []int64{1, 2, 3}
	for i, k := range ks {
		f.allow(f.checkCost(p, k, used[i]), limit-used[i], g+" (each key gets a count of its own)")
	}
	// Both cycles of three: caller order (1, 2, 0) and (2, 0, 1) of the
	// sorted keys.
	for _, order := range [][]int{{1, 2, 0}, {2, 0, 1}} {
		checks := make([]domain.Check, len(order))
		want := make([]int64, len(order))
		for i, j := range order {
			used[j]++
			checks[i] = f.check(p, ks[j])
			want[i] = limit - used[j]
		}
		require.Equal(t, want, f.admitAllowed(checks, g), "%s: the batch's allowances, in caller order", g)
		for j, k := range ks {
			used[j]++
			f.allow(f.check(p, k), limit-used[j], g+" (each key holds the count the batch wrote to it)")
		}
	}
}
