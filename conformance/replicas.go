package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// replicasScenario checks, on two store values over one backend (the
// case's Store, replica A, and a second one from [Instance.OpenReplica],
// replica B), that a limit holds across replicas as it holds in one
// process. Each case targets a bug that one store value alone never shows,
// because the state it keeps per value is right as long as that value is
// the only writer:
//
//   - A cache of the counts a replica wrote (or read) serves the other
//     replica's units as never spent: interleaved checks and batches on
//     the two admit more than the limit.
//   - A capacity count kept per replica lets each admit new keys up to the
//     bound, so together they exceed it.
//   - Locks taken in the replica's own process (a mutex per key, a lock
//     manager per pool) let two replicas read one counter before either
//     writes it back: an update is lost.
//   - Cleanup bookkeeping kept per replica (which keys it created, a slot
//     count of its own) leaves what another replica created in place, or
//     frees it only on one side.
//   - A clock floor kept per replica lets a replica whose clock is behind
//     another's report a key's retry time longer than the other reported
//     before it.
//   - Stats computed from per-replica state disagree between replicas.
func replicasScenario() scenario {
	return scenario{name: "replicas", cases: []testCase{
		{name: "interleaved_checks_and_batches_on_two_replicas_share_one_count", replica: true, single: true, run: testReplicasShareCounts},
		{name: "two_replicas_share_the_capacity_bound", replica: true, opts: capacityOptions, run: testReplicasShareCapacity},
		{name: "overlapping_checks_on_two_replicas_lose_no_update", replica: true, single: true, run: testReplicasOverlap},
		{name: "a_counter_one_replica_cleans_up_is_gone_for_the_other", replica: true, opts: capacityOptions, run: testReplicasShareCleanup},
		{name: "a_window_ends_at_the_same_time_on_both_replicas", replica: true, single: true, run: testReplicasShareWindowEnd},
		{name: "a_replica_whose_clock_is_behind_lengthens_no_retry_time_the_other_reported", replica: true, single: true, run: testReplicasShareClamp},
		{name: "stats_agree_across_replicas", replica: true, opts: capacityOptions, run: testReplicasAgreeOnStats},
	}}
}

// replica opens a second replica over the case's store, as a fixture of
// its own over the same operation log, and from then on names the two
// "A" and "B" in the log. It skips the case when the harness cannot open
// one.
func (f *fixture) replica() *fixture {
	f.t.Helper()
	if f.inst.OpenReplica == nil {
		f.skip("replicas: Instance.OpenReplica is nil, so the suite cannot open a second replica over the store's data")
	}
	s := f.inst.OpenReplica(f.t)
	require.NotNil(f.t, s, "harness: Instance.OpenReplica returned no store")
	require.Equal(f.t, f.caps.has, capabilitiesOf(s),
		"harness: the replica Instance.OpenReplica opened (%T) offers other optional capabilities than Store", s)
	f.rep.replicas.Add(1)
	inst := f.inst
	inst.Store = s
	r := &fixture{
		t: f.t, ctx: f.ctx, opts: f.opts, inst: inst, caps: f.caps, rep: f.rep, log: f.log,
		began: f.began, path: f.path, parts: f.parts, goid: f.goid, on: "B: ",
	}
	if f.path == viaAdmitCheck {
		r.single = s.(ports.CheckAdmitter)
	}
	l, err := app.NewLimiter(admitOnly{r}, app.LimiterConfig{MaxBatchSize: f.opts.MaxBatchSize})
	require.NoError(f.t, err, "harness: Options.MaxBatchSize")
	r.limiter = l
	f.t.Cleanup(r.requireNoKeyInErrors)
	f.on = "A: "
	f.log.add("opened replica B over replica A's data")
	return r
}

func testReplicasShareCounts(t *testing.T, f *fixture) {
	const g = "replicas: checks and batches on two replicas count into one counter, so together they admit exactly the limit"
	b := f.replica()
	const limit = 6
	p := f.policy(limit, window)
	k, k2 := f.key(), f.key()
	c, c2 := f.check(p, k), f.check(p, k2)
	f.allow(c, limit-1, g)
	b.allow(c, limit-2, g+" (B counts after A's unit)")
	f.allow(c, limit-3, g+" (A counts after B's unit)")
	require.Equal(t, []int64{limit - 4, limit - 1}, b.admitAllowed([]domain.Check{c, c2}, g+" (a batch on B)"),
		"%s: a batch on B counts after the units A and B took", g)
	require.Equal(t, []int64{limit - 2, 0}, f.admitAllowed([]domain.Check{c2, f.checkCost(p, k, 2)}, g+" (a batch on A)"),
		"%s: a batch on A counts after the units A and B took", g)
	den := b.deny(c, domain.QuotaExhausted, g+" (the limit is spent on B)")
	b.requireRetry(den, window, g+" (B reports A's window)")
	f.deny(c, domain.QuotaExhausted, g+" (the limit is spent on A)")
	b.admitDenied([]domain.Check{c2, c}, 1, domain.QuotaExhausted, g+" (a batch on B over the spent limit)")
	f.allow(f.checkCost(p, k2, limit-2), 0, g+" (the denied batch on B took nothing)")
}

func testReplicasShareCapacity(t *testing.T, f *fixture) {
	const g = "replicas: the capacity bound is one bound for every replica, so new keys on two replicas together fill " +
		"a partition exactly"
	b := f.replica()
	p := f.policy(2, window)
	part := f.somePart(p)
	capacity := f.opts.Capacity
	ks := f.keysIn(p, part, capacity+2)
	// Alternate: each replica stores half of the partition's keys, so a
	// replica that counts only its own sees room to spare.
	for i := range capacity - 2 {
		on := f
		if i%2 == 1 {
			on = b
		}
		on.allow(f.check(p, ks[i]), 1, g)
	}
	require.Equal(t, []int64{1, 1}, b.admitAllowed([]domain.Check{f.check(p, ks[capacity-2]), f.check(p, ks[capacity-1])},
		g+" (a batch on B takes the last two slots)"), "%s: both new keys of B's batch are counted", g)
	f.deny(f.check(p, ks[capacity]), domain.StorageCapacity, g+" (A holds fewer keys itself, but the partition is full)")
	b.deny(f.check(p, ks[capacity+1]), domain.StorageCapacity, g+" (B finds the partition full too)")
	f.admitDenied([]domain.Check{f.check(p, ks[0]), f.check(p, ks[capacity+1])}, 1, domain.StorageCapacity,
		g+" (a batch on A with a new key)")
}

// testReplicasOverlap races a check on A, pinned just after its clock
// sample with its locks held, against a check of the same key on B. A
// store whose locks are shared keeps B out until A has written; one whose
// locks are its replica's own lets B read the counter A has read and
// write before A does, and one of the two units is lost. A held race of
// checks on both replicas follows.
func testReplicasOverlap(t *testing.T, f *fixture) {
	const g = "replicas: checks of one key on two replicas exclude each other, so each counts a unit the other saw"
	b := f.replica()
	const limit, late = 100, time.Minute
	p, k := f.policy(limit, window), f.key()
	c := f.check(p, k)
	f.allow(c, limit-1, g)
	r1, r2, held := f.pinnedRace(g, f.checkOp(c, f.path), func() { f.advance(late) }, b.checkOp(c, f.path))
	how := "a store that reads no ManualClock ran A's check to its end"
	if held {
		how = "A's check pinned just after its clock sample"
	}
	f.log.add("race: check %s via %s on A, %s, while time moved %v on and the same check ran on B → A %s; B %s",
		f.log.check(c), f.path, how, late, describeResult(r1), describeResult(r2))
	f.requireExactCount([][]result{{r1}, {r2}}, limit-1, 2, g)

	const workers, perWorker = 4, 3
	ws := make([]worker, workers)
	for i := range ws {
		on := f
		if i%2 == 1 {
			on = b
		}
		ws[i] = worker{name: fmt.Sprintf("checker %d on %s", i+1, on.on[:1]), ops: repeat(perWorker, on.checkOp(c, f.path))}
	}
	results := f.race(g, true, ws)
	f.logRace(fmt.Sprintf("%d goroutines × %d checks of %s via %s, alternately on A and B", workers, perWorker, f.log.check(c), f.path), true, results)
	f.requireExactCount(results, limit-3, workers*perWorker, g)
	used := int64(3 + workers*perWorker)
	b.allow(f.checkCost(p, k, limit-used), 0, g+" (every allowed check was counted)")
}

func testReplicasShareCleanup(t *testing.T, f *fixture) {
	const g = "replicas: cleanup on one replica removes the expired counters every replica created, and frees their " +
		"slots for every replica"
	b := f.replica()
	cleanup := f.requireCleaner()
	p := f.policy(2, window)
	part := f.somePart(p)
	capacity := f.opts.Capacity
	ks := f.keysIn(p, part, 2*capacity)
	for i := range capacity {
		on := f
		if i%2 == 1 {
			on = b
		}
		on.allow(f.check(p, ks[i]), 1, g)
	}
	f.deny(f.check(p, ks[capacity]), domain.StorageCapacity, g+" (the partition is full)")
	f.advance(window)
	bCleanup, _ := b.cleaner()
	require.Equal(t, capacity, b.cleanAll(bCleanup, 2*capacity, g+" (B cleans up)"),
		"%s: B removes every expired counter, A's as well as its own", g)
	n, err := cleanup(2 * capacity)
	require.NoError(t, err, "%s: cleanup on A", g)
	require.Zero(t, n, "%s: A finds nothing left to remove: B removed it", g)
	// Every slot is free again, on both replicas, and the removed counters
	// start afresh.
	for i := range capacity {
		on := f
		if i%2 == 0 {
			on = b
		}
		on.allow(f.check(p, ks[capacity+i]), 1, g+" (a new key takes a slot cleanup freed)")
	}
	b.deny(f.check(p, ks[0]), domain.StorageCapacity, g+" (a removed key is new again, and the partition is full)")
}

func testReplicasShareWindowEnd(t *testing.T, f *fixture) {
	const g = "replicas: a window anchored on one replica ends at the same time on the other"
	b := f.replica()
	const limit, step = 5, 10 * time.Minute
	p, k := f.policy(limit, window), f.key()
	c := f.check(p, k)
	f.allow(c, limit-1, g)
	f.advance(step)
	a := b.allow(c, limit-2, g+" (B counts into A's window)")
	b.requireDuration(window-step, a.ResetAfter, g+" (B reports the end of A's window)")
	f.advance(window - step)
	// A's window has ended: B renews it, and A counts into B's.
	a = b.allow(c, limit-1, g+" (B renews the window that ended)")
	b.requireDuration(window, a.ResetAfter, g+" (B anchors a new window)")
	f.advance(step)
	a = f.allow(c, limit-2, g+" (A counts into B's window)")
	f.requireDuration(window-step, a.ResetAfter, g+" (A reports the end of B's window)")
}

// testReplicasShareClamp steps the clock back once replica A has read a
// time, and asks B, which has read none as late. A denial writes nothing,
// so the key's window does not hold the time A read: only a floor under
// the clock that every replica shares does.
func testReplicasShareClamp(t *testing.T, f *fixture) {
	const g = "replicas: a replica whose clock is behind another's reports no longer retry time for a key than the " +
		"other reported before (time never goes backwards for a key, whichever replica reads it)"
	f.requireSteppableClock()
	b := f.replica()
	p, k := f.policy(1, window), f.key()
	c := f.check(p, k)
	f.allow(c, 0, g)
	f.advance(clampStep)
	f.requireRetry(f.deny(c, domain.QuotaExhausted, g), window-clampStep, g+" (A's denial)")
	f.stepBack(clampStep / 2)
	b.requireRetry(b.deny(c, domain.QuotaExhausted, g+" (B, its clock behind)"), window-clampStep,
		g+" (B's denial after the clock stepped back: no longer than A's before it)")
	f.advance(clampStep / 2)
	f.requireRetry(f.deny(c, domain.QuotaExhausted, g+" (A, after the clock caught up)"), window-clampStep, g+" (A's denial)")
}

func testReplicasAgreeOnStats(t *testing.T, f *fixture) {
	const g = "replicas: Stats on either replica report the one backend's counters and headroom"
	if !f.caps.has[StatsReporter] {
		f.skip("replicas: the store does not implement ports.StatsReporter")
	}
	b := f.replica()
	p := f.policy(1, window)
	part := f.somePart(p)
	ks := f.keysIn(p, part, 3)
	f.allow(f.check(p, ks[0]), 0, g)
	b.allow(f.check(p, ks[1]), 0, g)
	b.admitAllowed([]domain.Check{f.check(p, ks[2])}, g)
	sa, _ := f.stats()
	sb, _ := b.stats()
	require.Equal(t, sa, sb, "%s: A and B report different Stats", g)
	require.Equal(t, int64(3), sa.Entries, "%s: the three counters A and B stored", g)
	require.Equal(t, int64(f.opts.Capacity-3), sa.Headroom[part], "%s: the partition's headroom after three new keys", g)
}
