package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// lookalikesScenario checks that a store tells counter keys apart by all 64
// of their bytes. A store that keys a map, an index or a "have we seen this
// key" filter on less (the 64-bit Hash64, a prefix or a suffix of the
// subject key, the first bytes of the fingerprint, the fingerprint XOR the
// subject key, a hash folded by XOR) meets two keys that agree on what it
// kept only when they are built to: random keys never do. So the suite
// builds them, with domain.SubjectKeyFromBytes, from a stored key: each
// lookalike agrees with it on what one such reduction keeps, and must still
// count in a counter of its own and take a slot of its own.
func lookalikesScenario() scenario {
	return scenario{name: "lookalikes", cases: []testCase{
		{name: "keys_alike_in_part_keep_counters_of_their_own", single: true, run: testLookalikeCounters},
		{name: "keys_alike_in_part_need_slots_of_their_own", single: true, opts: capacityOptions, run: testLookalikeSlots},
		{name: "keys_an_encoding_folds_keep_counters_of_their_own", single: true, run: testEncodedLookalikeCounters},
	}}
}

// lookalike is a counter key built to agree with another in part.
type lookalike struct {
	name string // what it shares with the first key, for messages
	p    domain.Policy
	k    domain.SubjectKey
}

// lookalikes returns keys that each differ from p's counter for k, but
// agree with it on what a store that reduces keys might keep.
func (f *fixture) lookalikes(p domain.Policy, k domain.SubjectKey) []lookalike {
	f.t.Helper()
	raw := k.Bytes()
	flip := func(at ...int) domain.SubjectKey {
		b := raw
		for _, i := range at {
			b[i] ^= 0x5a // the same change at each, so that an XOR fold cancels it
		}
		return domain.SubjectKeyFromBytes(b)
	}
	other := f.policyOf("conformance.lookalike", "subject", p.Limit()+2, p.Window())
	fa, fb := p.Fingerprint(), other.Fingerprint()
	crossed := raw
	for i := range crossed {
		crossed[i] ^= fa[i] ^ fb[i]
	}
	ls := []lookalike{
		{"differs from the first only in its subject key's last byte (same Hash64, prefix and first half)", p, flip(31)},
		{"differs from the first only in its subject key's first byte (same suffix)", p, flip(0)},
		{"differs from the first only in two bytes of its subject key eight apart, changed alike (same XOR fold)", p, flip(1, 9)},
		{"is under another policy, its subject key the first's XOR both fingerprints (same fingerprint XOR subject key)",
			other, domain.SubjectKeyFromBytes(crossed)},
		{"is the first's subject key under another policy whose fingerprint begins with the same byte", f.policyLike(p), k},
	}
	for _, l := range ls {
		f.log.nameKey(l.k, f.partOf(l.p, l.k), f.parts)
	}
	return ls
}

// policyLike returns a policy other than p whose fingerprint begins with the
// same byte as p's, and whose limit is at least 2. About 256 fingerprints
// are tried; they are deterministic, so the bound only stops a broken domain.
func (f *fixture) policyLike(p domain.Policy) domain.Policy {
	f.t.Helper()
	want := p.Fingerprint()
	pid, err := domain.NewPolicyID("conformance.lookalike.first-byte")
	require.NoError(f.t, err)
	sid, err := domain.NewScopeID("subject")
	require.NoError(f.t, err)
	for limit := int64(2); limit < 1<<16; limit++ {
		q, err := domain.NewPolicy(pid, sid, limit, p.Window())
		require.NoError(f.t, err)
		if got := q.Fingerprint(); got[0] == want[0] && got != want {
			f.log.namePolicy(q)
			return q
		}
	}
	require.FailNow(f.t, "harness: no policy's fingerprint begins with the first's byte")
	return domain.Policy{}
}

func testLookalikeCounters(t *testing.T, f *fixture) {
	const g = "lookalikes: a key alike in part to a stored one counts in a counter of its own"
	p := f.policy(3, window)
	k := f.key()
	f.allow(f.checkCost(p, k, 3), 0, g+" (the first key spends its whole limit)")
	for _, l := range f.lookalikes(p, k) {
		lim := l.p.Limit()
		f.allow(f.check(l.p, l.k), lim-1, g+": a key that "+l.name+" starts a window of its own")
		f.allow(f.check(l.p, l.k), lim-2, g+": a key that "+l.name+" counts in its own window")
	}
	f.deny(f.check(p, k), domain.QuotaExhausted, g+" (the first key is still exhausted: no lookalike wrote its counter)")
}

func testLookalikeSlots(t *testing.T, f *fixture) {
	const g = "lookalikes: a new key alike in part to a stored one still needs a free slot of its own"
	p := f.policy(2, window)
	k := f.key()
	f.allow(f.check(p, k), 1, g+" (the first key)")
	occ := occupancy{f.partOf(p, k): 1}
	for _, l := range f.lookalikes(p, k) {
		part := f.partOf(l.p, l.k)
		if n := f.opts.Capacity - occ[part]; n > 0 {
			f.admitNew(p, part, n, g+" (filling the partition of the next lookalike)")
			occ[part] = f.opts.Capacity
		}
		f.deny(f.check(l.p, l.k), domain.StorageCapacity, g+": a key that "+l.name+" finds its partition full")
	}
	f.requireOccupancy(occ, g+" (no lookalike took a slot)")
}
