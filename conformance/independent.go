package conformance

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// testIndependentKeysRace races one check on each of four keys that share
// no lock (in different partitions, where the store has several), each
// key holding a different count. Admissions of different keys run at once
// by design, so anything an admission keeps outside its own locks (a
// store-wide scratch observation, decision or batch reused to save an
// allocation, a "last key read" cache) is shared between them: the held
// clock reads put every racer inside the store at once, and a racer that
// decides on another's state reports that key's count, or writes it.
func testIndependentKeysRace(t *testing.T, f *fixture) {
	const g = "concurrency: checks on different keys racing each decide on their own key's state"
	const racers, limit = 4, 4
	p := f.policy(limit, window)
	var parts []int
	for range racers {
		q := f.otherPart(p, parts...)
		if q < 0 {
			q = f.somePart(p)
		}
		parts = append(parts, q)
	}
	ks := make([]domain.SubjectKey, racers)
	ws := make([]worker, racers)
	for i := range ks {
		ks[i] = f.keyIn(p, parts[i])
		// Key i holds i units, so each racer's answer is its own.
		if i > 0 {
			f.allow(f.checkCost(p, ks[i], int64(i)), int64(limit-i), g)
		}
		ws[i] = worker{name: fmt.Sprintf("key %d", i+1), ops: []raceOp{f.checkOp(f.check(p, ks[i]), f.path)}}
	}
	results := f.race(g, true, ws)
	f.logRace(fmt.Sprintf("%d keys holding 0 to %d units, one check each via %s", racers, racers-1, f.path), true, results)
	for i, rs := range results {
		require.Len(t, rs, 1, "harness: one result per racer")
		r := rs[0]
		require.NoError(t, r.err, "%s: the store failed a valid check", g)
		require.Equal(t, domain.Allowed, r.outcome, "%s: key %d holds %d of %d units, got %s (%s)", g, i+1, i, limit, r.outcome, r.reason)
		require.Equal(t, []int64{int64(limit - i - 1)}, r.remaining,
			"%s: key %d held %d of %d units, so one more leaves %d: the check decided on another key's state", g, i+1, i, limit, limit-i-1)
	}
	for i, k := range ks {
		if rem := int64(limit - i - 1); rem > 0 {
			f.allow(f.checkCost(p, k, rem), 0, fmt.Sprintf("%s (key %d was counted once, in its own counter)", g, i+1))
		}
		f.deny(f.check(p, k), domain.QuotaExhausted, fmt.Sprintf("%s (key %d is exhausted)", g, i+1))
	}
}
