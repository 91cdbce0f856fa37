package conformance

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// testDeniedBatchShowsNoUnit races a batch that must be denied at its
// second check with a single check of its first key. A store that runs a
// batch as one single-key step per check (a Redis Cluster port, whose
// scripts may name keys of one slot only) and undoes the earlier steps
// when a later one is denied lets the racing check read the first key
// with the batch's unit in it, between the step that wrote it and the one
// that takes it back, and deny it: a denial no state of the store
// justified, since the batch consumed nothing.
func testDeniedBatchShowsNoUnit(t *testing.T, f *fixture) {
	const g = "concurrency: a batch denied at a later check shows no racing check a unit of its earlier keys"
	p := f.policy(1, window)
	a, b := f.key(), f.key()
	f.allow(f.check(p, b), 0, g+" (the batch's second key spends its limit, so the batch is denied)")
	x := []domain.Check{f.check(p, a), f.check(p, b)}
	results := f.race(g, true, []worker{
		{name: "batch " + f.log.batch(x), ops: []raceOp{f.batchOp(x)}},
		{name: "check " + f.log.check(x[0]), wave: 1, ops: []raceOp{f.checkOp(x[0], f.path)}},
	})
	f.logRace(fmt.Sprintf("%s, %s, while a check of its first key via %s waits", f.log.batch(x), f.heldInClock(), f.path), true, results)
	require.Len(t, results[0], 1, "%s: the batch finished", g)
	require.Len(t, results[1], 1, "%s: the check finished", g)
	bx, cx := results[0][0], results[1][0]
	require.NoError(t, bx.err, "%s: the store failed a valid batch", g)
	require.NoError(t, cx.err, "%s: the store failed a valid check", g)
	require.Equal(t, domain.Denied, bx.outcome, "%s: the batch names a spent key, so it is denied", g)
	require.Equal(t, domain.QuotaExhausted, bx.reason, "%s: the batch is denied for quota", g)
	require.Equal(t, domain.Allowed, cx.outcome,
		"%s: the denied batch consumed nothing, so the check of its first key finds a unit left whenever it ran (got %s, %s)",
		g, cx.outcome, cx.reason)
	f.deny(f.check(p, a), domain.QuotaExhausted, g+" (the first key holds the check's unit)")
}
