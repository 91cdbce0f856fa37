package conformance

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// lockCyclesScenario stages lock waits so that an admission or a Stats call
// that takes its locks in an order of its own deadlocks on every run,
// rather than only when a race happens to interleave (SPEC section 3: lock
// in a deterministic order, no deadlock between opposite-order batches).
//
// Two holders, each a check pinned just after its clock sample with its
// key's locks held, stand in the way of two waiters; the holders are then
// released one at a time, each waiter stepping to its next lock between.
// Opposite-order batches of two keys cannot show a store that sorts a
// batch's keys only when there are two (or sorts a pair and takes longer
// batches in caller order): the batches here have three keys, each in a
// partition of its own when the store has three, in two rotations of one
// cycle. A Stats call that locks partitions in the opposite order to
// admissions deadlocks with a batch only when each holds what the other
// waits for, which the holders arrange the same way.
func lockCyclesScenario() scenario {
	return scenario{name: "lockcycles", cases: []testCase{
		{name: "batches_of_three_keys_in_rotated_orders_do_not_deadlock", run: testRotatedBatchesNoDeadlock},
		{name: "stats_racing_a_batch_across_partitions_does_not_deadlock", run: testStatsBatchNoDeadlock},
	}}
}

// distinctPartKeys returns n fresh keys of p, in n distinct partitions when
// the store has that many, and the partitions, ascending, they are in.
func (f *fixture) distinctPartKeys(p domain.Policy, n int) ([]domain.SubjectKey, []int) {
	f.t.Helper()
	ks := make([]domain.SubjectKey, n)
	parts := make([]int, n)
	for i := range ks {
		parts[i] = i % f.parts
		ks[i] = f.keyIn(p, parts[i])
	}
	return ks, parts
}

func testRotatedBatchesNoDeadlock(t *testing.T, f *fixture) {
	const g = "lockcycles: batches of three keys in two rotations of one order, staged behind two held checks, " +
		"neither deadlock nor miscount (a store that sorts only a batch of two keys takes three in caller order)"
	const limit = 10
	p := f.policy(limit, window)
	ks, _ := f.distinctPartKeys(p, 3)
	a, b, c := f.check(p, ks[0]), f.check(p, ks[1]), f.check(p, ks[2])
	for _, ch := range []domain.Check{a, b, c} {
		f.allow(ch, limit-1, g+" (each key is stored before the race)")
	}
	// First waits for a, held by the first holder; second takes b and
	// waits for c, held by the second. Released in turn, first takes a and
	// waits for b; second then takes c and waits for a: a cycle, unless
	// both batches lock their keys in one order.
	hr, wr := f.stagedRace(g,
		[]raceOp{f.batchOp([]domain.Check{a}), f.batchOp([]domain.Check{c})},
		[]raceOp{f.batchOp([]domain.Check{a, b, c}), f.batchOp([]domain.Check{b, c, a})})
	for i, r := range append(hr, wr...) {
		require.NoError(t, r.err, "%s: admission %d of 4 failed", g, i+1)
		require.Equal(t, domain.Allowed, r.outcome, "%s: admission %d of 4 is within the limit, got %s (%s)", g, i+1, r.outcome, r.reason)
	}
	f.allow(a, limit-5, g+" (the first key counted once before the race, by its holder and by both batches)")
	f.allow(b, limit-4, g+" (the second key counted once before the race and by both batches)")
	f.allow(c, limit-5, g+" (the third key counted once before the race, by its holder and by both batches)")
}

func testStatsBatchNoDeadlock(t *testing.T, f *fixture) {
	const g = "lockcycles: Stats racing a batch across partitions, staged behind two held checks, does not deadlock " +
		"(a Stats call that locks partitions in the opposite order to admissions holds what the batch waits for)"
	if f.parts < 3 {
		f.skip("lockcycles: a store with fewer than three partitions has no cycle of partition locks to close")
	}
	if _, ok := f.stats(); !ok {
		f.skip("lockcycles: the store does not implement ports.StatsReporter")
	}
	p := f.policy(1, window)
	// New keys, so that a store which locks only the partitions of the
	// new keys it stores takes them too.
	lo, mid, hi := f.keyIn(p, 0), f.keyIn(p, 1), f.keyIn(p, 2)
	// The batch waits for partition 0, held by the first holder; Stats,
	// locking downwards, takes partition 2 and waits for 1, held by the
	// second. Released in turn, the batch takes 0 and waits for 2; Stats
	// takes 1 and waits for 0: a cycle, unless Stats locks upwards as
	// admissions do (or takes no partition lock at all).
	hr, wr := f.stagedRace(g,
		[]raceOp{f.batchOp([]domain.Check{f.check(p, f.keyIn(p, 0))}), f.batchOp([]domain.Check{f.check(p, mid)})},
		[]raceOp{f.batchOp([]domain.Check{f.check(p, lo), f.check(p, hi)}), f.statsOp()})
	for i, r := range append(hr, wr[:1]...) {
		require.NoError(t, r.err, "%s: admission %d of 3 failed", g, i+1)
		require.Equal(t, domain.Allowed, r.outcome, "%s: admission %d of 3 admits new keys into empty partitions, got %s (%s)",
			g, i+1, r.outcome, r.reason)
	}
	require.NoError(t, wr[1].err, "%s: Stats failed", g)
	f.requireOccupancy(occupancy{0: 2, 1: 1, 2: 1}, g)
}

// stagedRace runs holders, each pinned just after its first clock sample
// (with its locks held, on a store that reads a ManualClock), then starts
// waiters one at a time, each left until it has blocked in the store or
// finished, then releases the holders one at a time, leaving the waiters
// to block again between. It fails the case, as waitRace does, when every
// unfinished one stays blocked in the store: a deadlock.
func (f *fixture) stagedRace(g string, holders, waiters []raceOp) (hr, wr []result) {
	f.t.Helper()
	s := newSchedule()
	defer s.end()
	type done struct {
		i int
		r result
	}
	finished := make(chan done, len(holders)+len(waiters))
	pins := make([]*pin, len(holders))
	var members []*member
	start := func(i int, op raceOp, m *member) *member {
		joined := make(chan *member, 1)
		go func() {
			m := s.add(m)
			joined <- m
			m.enter()
			r := op(f.ctx)
			m.leave()
			m.finish()
			finished <- done{i, r}
		}()
		return <-joined
	}
	for i, op := range holders {
		pins[i] = newPin()
		defer pins[i].free()
		m := start(i, op, &member{name: "holder", pin: pins[i]})
		members = append(members, m)
		// Wait until the holder has taken its pinned clock sample, or
		// has finished (a store that reads no ManualClock), or has stayed
		// parked inside the store for blockedFor: waiting for a lock an
		// earlier holder took, on a store with one lock for several keys,
		// which sets the stage as far as the store lets it be.
		f.waitParkedOrDone(s, m, pins[i].sampled)
	}
	for i, op := range waiters {
		m := start(len(holders)+i, op, &member{name: "waiter", free: true})
		members = append(members, m)
		f.waitBlockedOrDone(s, m)
	}
	waitAll := func() {
		for _, m := range members[len(holders):] {
			f.waitBlockedOrDone(s, m)
		}
	}
	for _, p := range pins {
		p.free()
		waitAll()
	}
	f.log.add("race: %d holders pinned after their clock samples, %d waiters staged behind them, holders released in turn",
		len(holders), len(waiters))
	results := make([]result, len(holders)+len(waiters))
	var progress atomic.Int64
	all := make(chan struct{})
	go func() {
		for range results {
			d := <-finished
			results[d.i] = d.r
			progress.Add(1)
		}
		close(all)
	}()
	// A deadlock fails the case once every waiter has stayed parked in the
	// store for a second with none inside the clock.
	f.waitRace(g, s, all, &progress)
	for i, r := range results {
		f.log.add("race: operation %d of %d → %s", i+1, len(results), describeResult(r))
	}
	return results[:len(holders)], results[len(holders):]
}
