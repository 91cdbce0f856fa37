package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// fingerprintsScenario checks that a store keeps one counter per policy
// fingerprint and subject key however it builds its own keys from them. A
// store that keys counters by a join of the policy's fields (a Redis key
// "id:scope:limit:window:subject", a fingerprint of its own, columns too
// narrow for the limit or the window) or by part of the fingerprint (a short
// id) meets two policies it cannot tell apart only when they are chosen to
// agree on what it kept: the usual policies of a case never do. So the suite
// chooses them: policies whose limits or windows agree in their low 32 bits
// or whose limits are one float64,
// identifiers that join alike around a separator, identifiers that differ
// only in letter case or in one mark (alike under a case-insensitive
// collation, once made safe for a key name, or cleaned as a path), and
// fingerprints that
// share their first or last four bytes. It also checks what touches one
// subject under several fingerprints at once, as a policy whose limit or
// window changes during a rolling deploy does: each new counter of a batch
// takes a slot of its own, and cleanup removes an expired counter without
// its subject's others.
func fingerprintsScenario() scenario {
	return scenario{name: "fingerprints", cases: []testCase{
		{name: "policies_alike_in_part_keep_counters_of_their_own", single: true, run: testPoliciesAlikeInPart},
		{name: "one_subject_new_under_two_policies_needs_two_slots", opts: capacityOptions, run: testOneSubjectTwoNewCounters},
		{name: "cleanup_of_one_policys_counter_keeps_the_subjects_others", run: testCleanupKeepsSiblings},
	}}
}

// policyPair is two policies that a store reducing its keys might take for
// one: of(n) returns the n-th such pair, all of one kind, for n below
// variants.
type policyPair struct {
	name     string // how the second agrees with the first, for messages
	of       func(n int) (a, b domain.Policy, err error)
	variants int
}

// Policies whose fingerprints agree in part, found by searching limits of
// one policy id, scope and window: a store that keys counters by four bytes
// of the fingerprint (a short id of eight hex digits) meets them only when
// they are chosen. Both pairs also share their fingerprints' first byte,
// the byte PostgreSQL's capacity shard is made of.
const (
	alikeFingerprintID     = "conformance.lookalike.fingerprint"
	prefixLimitA           = 55_831  // shares its fingerprint's first four bytes with prefixLimitB
	prefixLimitB           = 151_067 //
	suffixLimitA           = 75_547  // shares its fingerprint's first byte and last four bytes with suffixLimitB
	suffixLimitB           = 1_863_248
	alikeFingerprintWindow = time.Hour
)

// policyPairs returns the kinds of policy pairs that
// testPoliciesAlikeInPart checks.
func policyPairs() []policyPair {
	// A partition picked by the fingerprint's first byte, as PostgreSQL's
	// is, holds both policies of about one pair in 256.
	const scope, limit, variants = "subject", 3, 1 << 12
	id := func(n int) string { return fmt.Sprintf("conformance.join%d", n) }
	pairs := []policyPair{
		{"has a limit 2^32 above the first's (alike in an int32 column)", func(n int) (a, b domain.Policy, err error) {
			return pairOf(id(n), scope, limit, window, id(n), scope, limit+1<<32, window)
		}, variants},
		{"has a limit one above the first's 2^53 (alike as a float64, a JSON number)", func(n int) (a, b domain.Policy, err error) {
			return pairOf(id(n), scope, 1<<53, window, id(n), scope, 1<<53+1, window)
		}, variants},
		{"has a window 2^32 ms longer than the first's (alike in an int32 column of milliseconds)", func(n int) (a, b domain.Policy, err error) {
			return pairOf(id(n), scope, limit, window, id(n), scope, limit, window+(1<<32)*time.Millisecond)
		}, variants},
	}
	// id+d and scope against id and d+scope join to the same text, with
	// no separator or with d itself between them.
	for _, d := range []string{":", "/", ".", "-", "_"} {
		pairs = append(pairs, policyPair{"moves a '" + d + "' from the end of the first's policy id to the start of its scope " +
			"(alike joined with no separator or with '" + d + "')", func(n int) (a, b domain.Policy, err error) {
			return pairOf(id(n)+d, scope, limit, window, id(n), d+scope, limit, window)
		}, variants})
	}
	// Identifiers are case-sensitive and every allowed mark is their own:
	// a store whose key columns compare under a case-insensitive collation,
	// that makes identifiers safe for a key name, or that cleans a scope as
	// a path, keys such policies alike.
	pairs = append(pairs,
		policyPair{"has the first's policy id in another letter case (alike under a case-insensitive collation)", func(n int) (a, b domain.Policy, err error) {
			return pairOf(fmt.Sprintf("conformance.Case%d", n), scope, limit, window, fmt.Sprintf("conformance.case%d", n), scope, limit, window)
		}, variants},
		policyPair{"has the first's scope in another letter case (alike under a case-insensitive collation)", func(n int) (a, b domain.Policy, err error) {
			return pairOf(id(n), "Subject", limit, window, id(n), scope, limit, window)
		}, variants},
		policyPair{"has a '_' where the first's policy id has a '.' (alike once marks are made safe for a key name)", func(n int) (a, b domain.Policy, err error) {
			return pairOf(id(n)+".x", scope, limit, window, id(n)+"_x", scope, limit, window)
		}, variants},
		policyPair{"has a '-' where the first's scope has a ':' (alike once marks are made safe for a key name)", func(n int) (a, b domain.Policy, err error) {
			return pairOf(id(n), "tenant:1", limit, window, id(n), "tenant-1", limit, window)
		}, variants},
		policyPair{"has the first's scope without its trailing '/' (alike as a cleaned path)", func(n int) (a, b domain.Policy, err error) {
			return pairOf(id(n), "tenant/1/", limit, window, id(n), "tenant/1", limit, window)
		}, variants},
	)
	fixed := func(limitA, limitB int64) func(int) (a, b domain.Policy, err error) {
		return func(int) (a, b domain.Policy, err error) {
			return pairOf(alikeFingerprintID, scope, limitA, alikeFingerprintWindow, alikeFingerprintID, scope, limitB, alikeFingerprintWindow)
		}
	}
	return append(pairs,
		policyPair{"has a fingerprint whose first four bytes are the first's", fixed(prefixLimitA, prefixLimitB), 1},
		policyPair{"has a fingerprint whose first byte and last four bytes are the first's", fixed(suffixLimitA, suffixLimitB), 1},
	)
}

func pairOf(idA, scopeA string, limitA int64, windowA time.Duration, idB, scopeB string, limitB int64, windowB time.Duration) (a, b domain.Policy, err error) {
	if a, err = domain.ParsePolicy(idA, scopeA, limitA, windowA); err != nil {
		return a, b, err
	}
	b, err = domain.ParsePolicy(idB, scopeB, limitB, windowB)
	return a, b, err
}

// pairNear returns a pair of policies of one kind and a fresh key whose
// counters under both land in one partition, so that a store keying its
// counters apart per partition meets them in one: it tries pairs of(0) to
// of(variants-1), and a few keys for each (a pair alone gets more), and
// settles for the first pair when none fits.
func (f *fixture) pairNear(of func(n int) (a, b domain.Policy, err error), variants int) (a, b domain.Policy, k domain.SubjectKey) {
	f.t.Helper()
	a, b, err := of(0)
	require.NoError(f.t, err, "harness: a policy")
	k = randomKey()
search:
	for n := range variants {
		pa, pb, err := of(n)
		require.NoError(f.t, err, "harness: a policy")
		for range max(4, 64/variants) {
			if f.partOf(pa, k) == f.partOf(pb, k) {
				a, b = pa, pb
				break search
			}
			k = randomKey()
		}
	}
	f.log.namePolicy(a)
	f.log.namePolicy(b)
	f.log.nameKey(k, f.partOf(a, k), f.parts)
	return a, b, k
}

// keyNear returns a fresh random key whose counters under p and q land in
// one partition.
func (f *fixture) keyNear(p, q domain.Policy) domain.SubjectKey {
	f.t.Helper()
	_, _, k := f.pairNear(func(int) (a, b domain.Policy, err error) { return p, q, nil }, 1)
	return k
}

func testPoliciesAlikeInPart(t *testing.T, f *fixture) {
	const g = "fingerprints: a policy alike in part to another counts in a counter of its own for the same subject"
	pairs := policyPairs()
	prefix, suffix := pairs[len(pairs)-2], pairs[len(pairs)-1]
	a, b, err := prefix.of(0)
	require.NoError(t, err, "harness: a policy")
	fa, fb := a.Fingerprint(), b.Fingerprint()
	require.Equal(t, fa[:4], fb[:4], "harness: the fingerprints of the prefix pair share their first four bytes")
	a, b, err = suffix.of(0)
	require.NoError(t, err, "harness: a policy")
	fa, fb = a.Fingerprint(), b.Fingerprint()
	require.Equal(t, [5]byte{fa[0], fa[28], fa[29], fa[30], fa[31]}, [5]byte{fb[0], fb[28], fb[29], fb[30], fb[31]},
		"harness: the fingerprints of the suffix pair share their first byte and last four bytes")
	for _, pr := range pairs {
		a, b, k := f.pairNear(pr.of, pr.variants)
		f.allow(f.checkCost(a, k, a.Limit()), 0, g+" (the first policy spends its whole limit)")
		f.allow(f.check(b, k), b.Limit()-1, g+": a policy that "+pr.name+" starts a window of its own")
		f.deny(f.check(a, k), domain.QuotaExhausted, g+": a policy that "+pr.name+" left the first's counter as it was")
	}
}

func testOneSubjectTwoNewCounters(t *testing.T, f *fixture) {
	const g = "fingerprints: a batch naming a new subject under two policies takes a slot for each counter"
	// The second policy's fingerprint begins as the first's, so that a
	// partition picked by that byte holds both counters.
	p := f.policy(2, window)
	q := f.policyLike(p)
	k := f.keyNear(p, q)
	part := f.partOf(p, k)
	require.Equal(t, part, f.partOf(q, k), "harness: no key puts both policies' counters in one partition")
	c := f.opts.Capacity
	f.admitNew(p, part, c-2, g)
	// A store that counts the slots a batch claims by subject, or by
	// policy, counts one claim before the third key, and admits it.
	other := f.keyIn(p, part)
	f.admitDenied([]domain.Check{f.check(p, k), f.check(q, k), f.check(p, other)}, 2, domain.StorageCapacity,
		g+" (three new counters, two of them one subject's, for two free slots: the third is refused)")
	f.requireOccupancy(occupancy{part: c - 2}, g+" (the denied batch stored nothing)")
	rem := f.admitAllowed([]domain.Check{f.check(q, k), f.check(p, k)}, g+" (the subject's two new counters for two free slots)")
	require.Equal(t, []int64{q.Limit() - 1, p.Limit() - 1}, rem, "%s: each counter starts on its own", g)
	f.deny(f.check(p, other), domain.StorageCapacity, g+" (and then the partition is full)")
	f.requireOccupancy(occupancy{part: c}, g)
}

func testCleanupKeepsSiblings(t *testing.T, f *fixture) {
	const g = "fingerprints: cleanup removes a subject's expired counter and keeps its active counters under other policies"
	cleanup := f.requireCleaner()
	// One policy id whose window changed, as during a rolling deploy: the
	// old window's counter ends first.
	old := f.policyOf("conformance.changed", "subject", 2, time.Minute)
	cur := f.policyOf("conformance.changed", "subject", 2, window)
	k := f.key()
	f.allow(f.check(old, k), 1, g)
	f.allow(f.check(cur, k), 1, g)
	f.advance(time.Minute)
	require.Equal(t, 1, f.cleanAll(cleanup, 8, g), "%s: one counter had expired", g)
	f.requireOccupancy(occupancy{f.partOf(cur, k): 1}, g+" (the active counter is still stored)")
	f.allow(f.check(cur, k), 0, g+" (the active counter kept its count)")
	f.allow(f.check(old, k), 1, g+" (the removed counter starts again)")
}
