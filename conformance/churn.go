package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// churnScenario checks that a store's bookkeeping survives a long life:
// counters created, expired, removed by cleanup in small calls and created
// anew, round after round, in one partition. Each round checks every
// counter it stored again and counts the partition exactly, so a defect
// that shows only after many cycles fails the round it first shows in:
//
//   - an open-addressing table whose deleted cells (tombstones) are never
//     reused, or not counted when it decides to grow, fills up after a few
//     dozen insertions and then stores a new key nowhere: the key is new
//     again at its next check, and takes one more slot each time;
//   - a lookup that stops at a deleted cell, or a delete that leaves an
//     empty cell in a probe chain, loses the counters stored behind it
//     once a neighbour is removed, while they are still active;
//   - a free list that frees a slot twice, or a bump allocator that
//     restarts when its partition empties but keeps its free list, hands
//     one slot to two keys;
//   - an expiry index (a heap, a sorted list) whose order goes stale after
//     removals names the wrong earliest expiry for a capacity denial's
//     retry time: a binary heap that cleanup filters in place, keeping the
//     order of what is left but never sifting it again, is no heap when
//     the counters went in out of order.
func churnScenario() scenario {
	return scenario{name: "churn", cases: []testCase{
		{name: "cycles_of_create_expire_and_cleanup_keep_every_counter_and_slot", single: true, opts: churnOptions, run: testChurn},
		{name: "retry_time_after_cleanup_is_the_next_earliest_end", single: true, opts: indexOrderOptions, run: testIndexOrderAfterCleanup},
	}}
}

// churnOptions give the churn case's partition room for two rounds of
// three counters each, a number no table rounds to.
var churnOptions = Options{Capacity: 6, MaxBatchSize: 8}

// churnModel is what the churn case knows its partition holds: each stored
// counter's key and end, as time since the case's first round began.
type churnModel struct {
	f       *fixture
	part    int
	now     time.Duration
	expires map[domain.SubjectKey]time.Duration
}

func (m *churnModel) advance(d time.Duration) {
	m.f.advance(d)
	m.now += d
}

// create admits n new keys of policy q, each exhausting its limit of one,
// a second apart so that their ends differ, and returns them.
func (m *churnModel) create(q domain.Policy, n int, g string) []domain.SubjectKey {
	m.f.t.Helper()
	ks := make([]domain.SubjectKey, n)
	for i := range ks {
		if i > 0 {
			m.advance(time.Second)
		}
		ks[i] = m.f.keyIn(q, m.part)
		d := m.f.decide(m.f.check(q, ks[i]), g)
		_, ok := d.Allowance()
		require.True(m.f.t, ok, "%s: partition %d holds %d of its %d counters, so a new key must be admitted, got %s",
			g, m.part, len(m.expires), m.f.opts.Capacity, describe(d))
		m.expires[ks[i]] = m.now + q.Window()
	}
	return ks
}

// requireKept checks that every counter the partition holds is still
// there, exhausted: a lost counter would admit its key afresh.
func (m *churnModel) requireKept(q map[domain.SubjectKey]domain.Policy, g string) {
	m.f.t.Helper()
	for k := range m.expires {
		m.f.deny(m.f.check(q[k], k), domain.QuotaExhausted, g+" (a stored counter is found again, exhausted, "+
			"however many counters of its partition were created and removed before it)")
	}
}

// cleanup removes every expired counter in calls of one and checks that
// exactly the expired ones went and every slot is accounted for.
func (m *churnModel) cleanup(cleanup func(int) (int, error), g string) {
	m.f.t.Helper()
	expired := 0
	for k, end := range m.expires {
		if end <= m.now {
			expired++
			delete(m.expires, k)
		}
	}
	require.Equal(m.f.t, expired, m.f.cleanAll(cleanup, 1, g), "%s: CleanupExpired(1), called until it removes nothing, "+
		"removes every expired counter of the partition and no other", g)
	m.f.requireOccupancy(occupancy{m.part: len(m.expires)}, g)
}

func testChurn(t *testing.T, f *fixture) {
	const g = "churn: after many cycles of create, expire and cleanup every counter is kept and every slot usable"
	cleanup := f.requireCleaner()
	const round = time.Minute
	// A short counter ends within the round that made it; a long one
	// outlives the next cleanup and ends in the round after.
	short := f.policyOf("conformance.churn", "short", 1, round-10*time.Second)
	long := f.policyOf("conformance.churn", "long", 1, 2*round-10*time.Second)
	m := &churnModel{f: f, part: f.somePart(short), expires: map[domain.SubjectKey]time.Duration{}}
	policyOf := map[domain.SubjectKey]domain.Policy{}
	c := f.opts.Capacity

	// The partition empties at the end of each of these rounds and then
	// holds one counter more than it ever held: a slot freed twice, or an
	// allocator that restarts on an empty partition but keeps its free
	// list, then serves two keys from one slot.
	for n := 1; n <= c; n++ {
		rg := fmt.Sprintf("%s (round %d: the emptied partition takes %d counters)", g, n, n)
		start := m.now
		for _, k := range m.create(short, n, rg) {
			policyOf[k] = short
		}
		m.requireKept(policyOf, rg)
		m.advance(round - (m.now - start))
		m.cleanup(cleanup, rg)
	}

	// Then half the partition outlives each cleanup while the other half
	// is removed around it: the counters stored behind removed ones are
	// still found, and the full partition's retry time is its earliest
	// end.
	const rounds = 30
	for r := range rounds {
		rg := fmt.Sprintf("%s (round %d of %d with counters outliving a cleanup)", g, r+1, rounds)
		// The survivors are looked up before any new key is stored: a new
		// key can fill the cell a removal emptied and so mend a broken
		// probe chain.
		m.requireKept(policyOf, rg)
		start := m.now
		for _, k := range m.create(long, c/2, rg) {
			policyOf[k] = long
		}
		if len(m.expires) == c {
			earliest := time.Duration(-1)
			for _, end := range m.expires {
				if earliest < 0 || end < earliest {
					earliest = end
				}
			}
			den := f.deny(f.check(long, f.keyIn(long, m.part)), domain.StorageCapacity,
				rg+" (the partition holds Capacity counters)")
			if retry, ok := den.RetryAfter(); ok {
				f.requireDuration(earliest-m.now, retry, rg+" (a capacity denial's retry time is the partition's earliest end)")
			}
		}
		m.advance(round - (m.now - start))
		m.cleanup(cleanup, rg)
	}
}

// indexOrderOptions hold the seven counters of the index-order case and
// the two that fill the partition after cleanup.
var indexOrderOptions = Options{Capacity: 7, MaxBatchSize: 8}

// testIndexOrderAfterCleanup stores seven counters whose ends, in the
// order they are created, make a binary min-heap that is not sorted
// (ends 10, 50, 20, 60, 70, 30, 40 minutes on), lets the two earliest end
// and removes them, fills the partition and asks for a retry time: the
// partition's earliest end is now 30 minutes on. A heap that cleanup
// filters in place, without sifting what is left (50, 60, 70, 30, 40), has
// 50 at its top.
func testIndexOrderAfterCleanup(t *testing.T, f *fixture) {
	const g = "churn: after cleanup removes the earliest counters, a capacity denial's retry time is the earliest end left"
	cleanup := f.requireCleaner()
	ends := []time.Duration{10, 50, 20, 60, 70, 30, 40}
	probe := f.policyOf("conformance.order", "probe", 1, window)
	part := f.somePart(probe)
	for i, end := range ends {
		p := f.policyOf("conformance.order", fmt.Sprintf("end-%d", i), 1, end*time.Minute)
		f.allow(f.check(p, f.keyIn(p, part)), 0, g)
	}
	f.advance(25 * time.Minute)
	require.Equal(t, 2, f.cleanAll(cleanup, 1, g), "%s: the counters ending 10 and 20 minutes on have ended", g)
	f.admitNew(probe, part, 2, g+" (the freed slots)")
	f.requireOccupancy(occupancy{part: f.opts.Capacity}, g)
	den := f.deny(f.check(probe, f.keyIn(probe, part)), domain.StorageCapacity, g+" (the partition is full)")
	if retry, ok := den.RetryAfter(); ok {
		f.requireDuration(5*time.Minute, retry, g+" (the counter ending 30 minutes on is the partition's earliest)")
	}
}
