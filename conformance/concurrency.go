package conformance

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// concurrencyScenario checks that concurrent checks never over-admit or
// lose an update, on each path and across the two, and that batches naming
// the same keys in opposite orders neither deadlock nor miscount.
//
// On a store that reads a [ManualClock] the held races are scheduled (see
// schedule.go): admissions are held inside the clock read until the others
// have piled up on the store's locks, so a store that reads or decides
// outside its locks is caught in every run, and the deadlock case makes
// two opposite-order batches each take their first lock before either
// takes its second; and one admission is pinned just after its clock
// sample while time moves on and a second admission of its key runs, so a
// store that samples its clock before its locks is caught too. Other
// stores race freely; run them with -count and -race.
func concurrencyScenario() scenario {
	return scenario{name: "concurrency", cases: []testCase{
		{name: "one_key_admits_exactly_the_limit", single: true, run: testOneKeyExactLimit},
		{name: "overlapping_checks_on_one_key_lose_no_update", single: true, run: testOverlappingChecks},
		{name: "overlapping_shadow_checks_lose_no_update", single: true, run: testOverlappingShadowChecks},
		{name: "overlapping_renewals_of_an_expired_window_lose_no_update", single: true, run: testOverlappingRenewals},
		{name: "overlapping_creations_of_new_keys_lose_no_update", single: true, run: testOverlappingCreations},
		{name: "single_checks_and_batches_exclude_each_other", run: testPathsExcludeEachOther},
		{name: "new_keys_racing_for_the_last_slots_take_exactly_those", single: true, opts: capacityOptions, run: testRacingNewKeys},
		{name: "opposite_order_batches_finish_and_count_exactly", run: testOppositeOrderBatches},
		{name: "opposite_order_batches_holding_their_first_lock_do_not_deadlock", run: testOppositeOrderFirstLocksHeld},
		{name: "batches_crossing_partitions_holding_their_first_lock_do_not_deadlock", run: testCrossedBatchesFirstLocksHeld},
		{name: "clock_is_read_with_the_locks_held", single: true, run: testClockReadWithLocksHeld},
		{name: "admissions_of_other_keys_racing_decide_on_their_own_counters", single: true, run: testOtherKeysDecideOnTheirOwn},
		{name: "batch_reads_the_clock_with_every_lock_held", single: true, run: testBatchClockReadWithLocksHeld},
		{name: "different_keys_racing_each_decide_on_their_own", single: true, run: testIndependentKeysRace},
		{name: "large_batches_never_wait_on_their_own_locks", opts: largeBatchOptions, run: testLargeBatchesOwnLocks},
		{name: "cleanup_racing_admissions_keeps_renewals_and_does_not_deadlock", single: true, run: testCleanupRacingAdmissions},
		{name: "cleanup_racing_renewals_frees_only_the_slots_it_empties", single: true, opts: cleanupSlotOptions, run: testCleanupRacingRenewalsKeepsSlots},
		{name: "counter_removed_and_created_anew_under_a_held_renewal_loses_no_update", single: true, run: testRecreatedUnderHeldRenewal},
		{name: "a_denied_batch_shows_a_racing_check_none_of_its_units", single: true, run: testDeniedBatchShowsNoUnit},
	}}
}

// largeBatchOptions let a batch name many keys, and a partition hold a
// full batch.
var largeBatchOptions = Options{Capacity: 64, MaxBatchSize: 32}

func testOneKeyExactLimit(t *testing.T, f *fixture) {
	const g = "concurrency: checks racing on one key admit exactly the limit"
	const workers, perWorker, limit = 8, 25, 60
	p, k := f.policy(limit, window), f.key()
	ws := make([]worker, workers)
	for i := range ws {
		ws[i] = worker{name: fmt.Sprintf("checker %d", i+1), ops: repeat(perWorker, f.checkOp(f.check(p, k), f.path))}
	}
	// Stats, when offered, reads the counters the checkers write: under
	// -race a Stats that reads without the store's locks shows.
	if _, ok := f.inst.Store.(ports.StatsReporter); ok {
		ws = append(ws, worker{name: "stats", ops: repeat(perWorker, f.statsOp())})
	}
	// Free-running: the store runs at full speed.
	results := f.race(g, false, ws)
	f.logRace(fmt.Sprintf("%d goroutines × %d checks of %s via %s", workers, perWorker, f.log.check(f.check(p, k)), f.path), false, results)
	for _, r := range results[workers:] {
		for _, st := range r {
			require.NoError(t, st.err, "%s: Stats failed while checks ran", g)
		}
	}
	f.requireExactCount(results[:workers], limit, limit, g)
	f.deny(f.check(p, k), domain.QuotaExhausted, g)
}

func testOverlappingChecks(t *testing.T, f *fixture) {
	const g = "concurrency: checks on one key whose admissions overlap each count once"
	const workers, perWorker, limit = 4, 3, 100
	p, k := f.policy(limit, window), f.key()
	ws := make([]worker, workers)
	for i := range ws {
		ws[i] = worker{name: fmt.Sprintf("checker %d", i+1), ops: repeat(perWorker, f.checkOp(f.check(p, k), f.path))}
	}
	results := f.race(g, true, ws)
	f.logRace(fmt.Sprintf("%d goroutines × %d checks of %s via %s", workers, perWorker, f.log.check(f.check(p, k)), f.path), true, results)
	f.requireExactCount(results, limit, workers*perWorker, g)
	f.allow(f.checkCost(f.policy(limit, window), k, limit-workers*perWorker), 0, g+" (every allowed check was counted)")
}

// testOverlappingRenewals is testOverlappingChecks on a counter whose
// window has expired with one unit used, so that the first racing check
// renews it back to a count of one: the state changed, but its count did
// not. An optimistic store whose write condition compares the count alone
// (a conditional write on used = :old, rather than on a version or the
// whole counter) lets every racer that read the expired window write its
// own renewal over the first: units lost.
func testOverlappingRenewals(t *testing.T, f *fixture) {
	const g = "concurrency: checks renewing one expired window whose admissions overlap each count once"
	const workers, perWorker, limit = 4, 3, 100
	// Each round renews a key of its own. One round loses an update of a
	// store that conditions its write on the count alone whenever two of
	// its admissions read the expired counter before either writes, which
	// the held race arranges; a loaded machine that stalls one admission
	// past the hold can spoil a round, not three.
	const rounds = 3
	for round := range rounds {
		p, k := f.policy(limit, window), f.key()
		f.allow(f.check(p, k), limit-1, g+" (one unit in a window that then expires)")
		f.advance(window)
		ws := make([]worker, workers)
		for i := range ws {
			ws[i] = worker{name: fmt.Sprintf("renewing checker %d", i+1), ops: repeat(perWorker, f.checkOp(f.check(p, k), f.path))}
		}
		results := f.race(g, true, ws)
		f.logRace(fmt.Sprintf("round %d of %d: %d goroutines × %d checks of %s via %s, its window expired", round+1, rounds, workers, perWorker, f.log.check(f.check(p, k)), f.path),
			true, results)
		f.requireExactCount(results, limit, workers*perWorker, g+
			" (a write condition must compare the whole counter or a version: a renewed window has the count of the expired one)")
		a := f.allow(f.checkCost(p, k, limit-workers*perWorker), 0, g+" (every allowed check was counted in the renewed window)")
		f.requireDuration(window, a.ResetAfter, g+" (the renewed window starts at the renewal)")
	}
}

// testOverlappingShadowChecks is testOverlappingChecks under a shadow
// policy. A shadow check that is allowed counts like any other, so a store
// that treats shadow mode as advisory (reading without its locks, or
// skipping them) loses the units of overlapping shadow checks, and the
// counter is short when the policy is switched to enforce.
func testOverlappingShadowChecks(t *testing.T, f *fixture) {
	const g = "concurrency: shadow checks on one key whose admissions overlap each count once"
	const workers, perWorker, limit = 4, 3, 100
	p, k := f.policy(limit, window), f.key()
	sc := f.check(f.shadow(p), k)
	ws := make([]worker, workers)
	for i := range ws {
		ws[i] = worker{name: fmt.Sprintf("shadow checker %d", i+1), ops: repeat(perWorker, f.checkOp(sc, f.path))}
	}
	results := f.race(g, true, ws)
	f.logRace(fmt.Sprintf("%d goroutines × %d checks of %s via %s", workers, perWorker, f.log.check(sc), f.path), true, results)
	f.requireExactCount(results, limit, workers*perWorker, g)
	f.allow(f.checkCost(p, k, limit-workers*perWorker), 0, g+" (every allowed shadow check was counted, as enforce mode sees)")
}

func testPathsExcludeEachOther(t *testing.T, f *fixture) {
	const g = "concurrency: AdmitCheck and Admit on one key exclude each other: no update is lost between the paths"
	f.requireSinglePath()
	const perWorker, limit = 3, 100
	p, k := f.policy(limit, window), f.key()
	ws := []worker{
		{name: "AdmitCheck 1", ops: repeat(perWorker, f.checkOp(f.check(p, k), viaAdmitCheck))},
		{name: "batch of one 1", ops: repeat(perWorker, f.checkOp(f.check(p, k), viaBatchOfOne))},
		{name: "AdmitCheck 2", ops: repeat(perWorker, f.checkOp(f.check(p, k), viaAdmitCheck))},
		{name: "batch of one 2", ops: repeat(perWorker, f.checkOp(f.check(p, k), viaBatchOfOne))},
	}
	results := f.race(g, true, ws)
	f.logRace(fmt.Sprintf("2 goroutines via AdmitCheck and 2 via batch_of_one × %d checks of %s", perWorker, f.log.check(f.check(p, k))), true, results)
	f.requireExactCount(results, limit, len(ws)*perWorker, g)
	f.allow(f.checkCost(p, k, limit-int64(len(ws)*perWorker)), 0, g+" (every allowed check was counted)")

	// Then free-running, as on a store whose clock the suite does not hold.
	const workers, free, freeLimit = 8, 20, 60
	k = f.key()
	ws = make([]worker, workers)
	for i := range ws {
		via := viaAdmitCheck
		if i%2 == 1 {
			via = viaBatchOfOne
		}
		ws[i] = worker{name: fmt.Sprintf("%s %d", via, i/2+1), ops: repeat(free, f.checkOp(f.check(f.policy(freeLimit, window), k), via))}
	}
	results = f.race(g, false, ws)
	f.logRace(fmt.Sprintf("%d goroutines, half via AdmitCheck, half via batch_of_one, × %d checks of %s",
		workers, free, f.log.check(f.check(f.policy(freeLimit, window), k))), false, results)
	f.requireExactCount(results, freeLimit, freeLimit, g)
}

// testRacingNewKeys races more new keys than a partition has free slots.
// Each key has its own lock, so only what guards the partition's count
// (a partition lock, a versioned occupancy) keeps them from all seeing
// the same free slots.
func testRacingNewKeys(t *testing.T, f *fixture) {
	const g = "concurrency: new keys racing for a partition's last free slots take exactly those slots"
	const racers, free = 4, 2
	c := f.opts.Capacity
	p := f.policy(1, window)
	part := f.somePart(p)
	f.admitNew(p, part, c-free, g)
	ks := f.keysIn(p, part, racers)
	ws := make([]worker, racers)
	for i, k := range ks {
		ws[i] = worker{name: fmt.Sprintf("new key %d", i+1), ops: []raceOp{f.checkOp(f.check(p, k), f.path)}}
	}
	results := f.race(g, true, ws)
	f.logRace(fmt.Sprintf("%d new keys in partition %d, which has %d free slots, one check each via %s", racers, part, free, f.path), true, results)
	allowed, refused := 0, 0
	for _, rs := range results {
		for _, r := range rs {
			require.NoError(t, r.err, "%s: the store failed a valid check", g)
			switch {
			case r.outcome == domain.Allowed:
				allowed++
			case r.outcome == domain.Denied && r.reason == domain.StorageCapacity:
				refused++
			default:
				require.Failf(t, g, "a new key is admitted or refused for storage capacity, got %s (%s)", r.outcome, r.reason)
			}
		}
	}
	require.Equal(t, free, allowed, "%s: %d of %d racing new keys were admitted into %d free slots: "+
		"the racers all saw the same free slots (the partition's count is not guarded across the admission)", g, allowed, racers, free)
	require.Equal(t, racers-free, refused, "%s: the others are refused for storage capacity", g)
	f.requireOccupancy(occupancy{part: c}, g)
	f.deny(f.check(p, f.keyIn(p, part)), domain.StorageCapacity, g+" (the partition is full)")
}

func testOppositeOrderBatches(t *testing.T, f *fixture) {
	const g = "concurrency: batches naming the same keys in opposite orders finish and count exactly"
	const workers, perWorker, limit = 8, 10, 30
	p := f.policy(limit, window)
	ks := f.keys(4)
	forward := make([]domain.Check, len(ks))
	backward := make([]domain.Check, len(ks))
	for i, k := range ks {
		forward[i] = f.check(p, k)
		backward[len(ks)-1-i] = f.check(p, k)
	}
	ws := make([]worker, workers)
	for i := range ws {
		batch, name := forward, "forward"
		if i%2 == 1 {
			batch, name = backward, "backward"
		}
		ws[i] = worker{name: fmt.Sprintf("%s %d", name, i/2+1), ops: repeat(perWorker, f.batchOp(batch))}
	}
	results := f.race(g, false, ws)
	f.logRace(fmt.Sprintf("%d goroutines × %d batches, half %s, half %s", workers, perWorker, f.log.batch(forward), f.log.batch(backward)), false, results)
	allowed := 0
	for _, rs := range results {
		for _, r := range rs {
			require.NoError(t, r.err, "%s: the store failed a valid batch", g)
			if r.outcome != domain.Allowed {
				continue
			}
			allowed++
			require.Len(t, r.remaining, len(ks), "%s: one allowance per check", g)
			for _, rem := range r.remaining[1:] {
				require.Equal(t, r.remaining[0], rem, "%s: the counters of an allowed batch moved apart", g)
			}
		}
	}
	require.Equal(t, limit, allowed, "%s: %d of %d racing batches were allowed", g, allowed, workers*perWorker)
	for _, k := range ks {
		f.deny(f.check(p, k), domain.QuotaExhausted, g+" (every key was charged by every allowed batch)")
	}
}

// testOppositeOrderFirstLocksHeld builds the one interleaving in which a
// store that locks a batch's keys in caller order deadlocks: batch [a, b]
// holds a and batch [b, a] holds b, each before taking its second lock.
// Two single-key batches take a and b first and are held in the clock read
// until both opposite-order batches wait on them; released together, they
// hand a to one batch and b to the other. A store that locks in one global
// order makes both wait for the same first key instead.
func testOppositeOrderFirstLocksHeld(t *testing.T, f *fixture) {
	const g = "concurrency: two opposite-order batches that each wait for their first key do not deadlock when the keys come free"
	const rounds, limit = 3, 100
	p := f.policy(limit, window)
	for round := range rounds {
		// Fresh keys every round, in different partitions where there are
		// several: a store that locks partitions, or stripes of keys, needs
		// two locks too, and a round whose keys share a stripe is followed
		// by rounds whose keys do not.
		a := f.key()
		b := f.key()
		if other := f.otherPart(p, f.partOf(p, a)); other >= 0 {
			b = f.keyIn(p, other)
		}
		ab := []domain.Check{f.check(p, a), f.check(p, b)}
		ba := []domain.Check{f.check(p, b), f.check(p, a)}
		f.raceHeldBatches(t, g, round, [2]string{"a", "b"}, ab, [2]string{"b", "a"}, ba)
		// Each key was charged three times: its holder and both batches.
		f.allow(f.checkCost(p, a, limit-3), 0, g+" (every batch charged a once)")
		f.allow(f.checkCost(p, b, limit-3), 0, g+" (every batch charged b once)")
	}
}

// testCrossedBatchesFirstLocksHeld is testOppositeOrderFirstLocksHeld
// for batches that share no key, only partitions: batch [a, b] and batch
// [c, d], each in ascending key order (a and c under one policy, b and d
// under another whose fingerprint sorts after it), where a and d land in
// one partition and b and c in another. A store that locks partitions in
// its keys' order (or the caller's) rather than the partitions' own takes
// them in opposite orders. Two single-key batches take a and c first and
// are held in the clock read until both batches wait on them; released
// together, they hand one partition to each batch. A store that locks its
// keys in key order and then the partitions of its new keys in partition
// order, or its partitions alone in partition order, passes.
func testCrossedBatchesFirstLocksHeld(t *testing.T, f *fixture) {
	const g = "concurrency: two batches whose keys' order crosses their partitions' order, each waiting for its first " +
		"lock, do not deadlock when the locks come free"
	if f.parts == 1 {
		f.skip("concurrency: the store has one capacity partition")
	}
	const rounds, limit = 2, 100
	// Counter keys sort by fingerprint first: every key of lo sorts before
	// every key of hi, whatever partitions the keys land in.
	lo, hi := f.policy(limit, window), f.policyOf("conformance.crossed", "subject", limit, window)
	if lfp, hfp := lo.Fingerprint(), hi.Fingerprint(); bytes.Compare(lfp[:], hfp[:]) > 0 {
		lo, hi = hi, lo
	}
	for round := range rounds {
		p1 := f.somePart(lo)
		p2 := f.otherPart(lo, p1)
		a, b := f.keyIn(lo, p2), f.keyIn(hi, p1)
		c, d := f.keyIn(lo, p1), f.keyIn(hi, p2)
		ab := []domain.Check{f.check(lo, a), f.check(hi, b)}
		cd := []domain.Check{f.check(lo, c), f.check(hi, d)}
		f.raceHeldBatches(t, g, round, [2]string{"a", "b"}, ab, [2]string{"c", "d"}, cd)
		f.allow(f.checkCost(lo, a, limit-2), 0, g+" (a was charged by its holder and its batch)")
		f.allow(f.checkCost(hi, b, limit-1), 0, g+" (b was charged by its batch)")
		f.allow(f.checkCost(lo, c, limit-2), 0, g+" (c was charged by its holder and its batch)")
		f.allow(f.checkCost(hi, d, limit-1), 0, g+" (d was charged by its batch)")
	}
}

// testClockReadWithLocksHeld catches a store that samples its clock before
// it holds the admission's locks (PostgreSQL's now(), the transaction's
// start, is such a sample). A first check on a key samples the clock; the
// suite pins it right after its sample, moves time a minute on, and runs a
// second check on the key. A store that holds the key's lock while it
// samples keeps the second check waiting until the first has written: the
// first counts first, at the earlier time. A store that sampled before
// its locks lets the second check count first, and the first then counts
// after it at a time that had passed: a later unit of the window reports
// more time left than an earlier one. (An optimistic store's first check
// finds the counter changed and starts again at the later time.)
func testClockReadWithLocksHeld(t *testing.T, f *fixture) {
	const g = "concurrency: the clock is sampled with every lock of the admission held, so a check that counts after " +
		"another in a window never reports more time left than it did"
	const limit, late = 5, time.Minute
	p, k := f.policy(limit, window), f.key()
	c := f.check(p, k)
	f.allow(c, limit-1, g)
	f.advance(time.Minute)
	r1, r2, held := f.pinnedRace(g, f.checkOp(c, f.path), func() { f.advance(late) }, f.checkOp(c, f.path))
	how := "a store that reads no ManualClock ran the first check to its end"
	if held {
		how = "the first check pinned just after its clock sample"
	}
	f.log.add("race: check %s via %s, %s, while time moved %v on and a second check ran → first %s; second %s",
		f.log.check(c), f.path, how, late, describeResult(r1), describeResult(r2))
	for i, r := range []result{r1, r2} {
		require.NoError(t, r.err, "%s: the store failed a valid check", g)
		require.Equal(t, domain.Allowed, r.outcome, "%s: check %d of 2 is within the limit, got %s (%s)", g, i+1, r.outcome, r.reason)
	}
	// Both counted into the one window: the one left with fewer units
	// counted last, so at the later time.
	earlier, later := r1, r2
	if r1.remaining[0] < r2.remaining[0] {
		earlier, later = r2, r1
	}
	require.Equal(t, []int64{limit - 2, limit - 3}, []int64{earlier.remaining[0], later.remaining[0]},
		"%s: each check counts one unit the other saw", g)
	require.LessOrEqual(t, later.reset, earlier.reset, "%s: the check that counted last (remaining %d) reports %v left, "+
		"more than the %v the check before it (remaining %d) reported: it decided at a time that had passed before "+
		"the other check wrote (read the clock after taking every lock, not before)",
		g, later.remaining[0], later.reset, earlier.reset, earlier.remaining[0])
	a := f.allow(f.checkCost(p, k, limit-3), 0, g+" (every unit was counted once)")
	f.requireDuration(window-time.Minute-late, a.ResetAfter, g+" (the window kept its end)")
}

// describeResult describes a race's result for the operation log.
func describeResult(r result) string {
	switch {
	case r.err != nil:
		return "error: " + r.err.Error()
	case r.outcome == domain.Allowed:
		return fmt.Sprintf("allowed (remaining %v, reset after %v)", r.remaining, r.reset)
	}
	return fmt.Sprintf("%s (%s)", r.outcome, r.reason)
}

// testLargeBatchesOwnLocks sends batches of MaxBatchSize new keys, one
// after another. A store that maps keys to a fixed set of locks (lock
// stripes, a hash of the key) must take a lock that two keys of one batch
// share only once: a sync.Mutex taken twice by one admission blocks it
// forever. Which keys share a stripe the suite cannot know, so it sends
// enough pairs of keys in one batch (496 a batch) that two keys on one
// stripe meet in some batch, for any store with up to a thousand or so
// stripes. The batches may be denied for storage capacity once the
// partitions fill; they must neither fail nor hang.
func testLargeBatchesOwnLocks(t *testing.T, f *fixture) {
	const g = "concurrency: a batch whose keys share a lock (a stripe of a striped lock) takes it once and does not wait on itself"
	const batches = 32
	p := f.policy(1, window)
	ops := make([]raceOp, batches)
	var first []domain.Check
	for i := range ops {
		checks := make([]domain.Check, f.opts.MaxBatchSize)
		for j := range checks {
			checks[j] = f.check(p, f.key())
		}
		if i == 0 {
			first = checks
		}
		ops[i] = f.batchOp(checks)
	}
	results := f.race(g, true, []worker{{name: "batches", ops: ops, watched: true}})
	f.logRace(fmt.Sprintf("%d batches of %d new keys of P1 each, one after another", batches, f.opts.MaxBatchSize), false, results)
	allowed := 0
	for i, r := range results[0] {
		require.NoError(t, r.err, "%s: the store failed valid batch %d of %d", g, i+1, batches)
		switch {
		case r.outcome == domain.Allowed:
			allowed++
		case r.outcome == domain.Denied && r.reason == domain.StorageCapacity:
		default:
			require.Failf(t, g, "batch %d of %d: a batch of new keys is allowed or denied for storage capacity, got %s (%s)",
				i+1, batches, r.outcome, r.reason)
		}
	}
	require.Equal(t, domain.Allowed, results[0][0].outcome, "%s: the first batch of new keys fits the empty store", g)
	bd := f.admit(first[:2], g)
	require.Equal(t, domain.Denied, bd.Outcome(), "%s: the first batch was counted, got %s", g, describeBatch(bd))
}

// testCleanupRacingAdmissions races CleanupExpired (and Stats, when
// offered) with admissions of the partition it cleans, in two held
// rounds.
//
// In the first, a renewal of an expired key h is pinned in its clock read,
// holding its partition, while cleanup starts (its clock reads are never
// held) and waits, and a renewal of another expired key k of the partition
// starts after it: once both wait, h's renewal is released, cleanup finds
// k expired, and k's renewal runs while cleanup goes on. A cleanup that collects expired keys
// under one lock and deletes them under another, without looking again,
// then deletes k's renewed counter, and k's next check finds a fresh
// window: an admitted unit forgotten.
//
// In the second, on a store with several partitions, a check pinned in its
// clock read holds a key of the higher of two partitions while cleanup
// starts, and a batch naming a key of each starts after it: cleanup that locks every partition at
// once in an order other than ascending takes the higher and waits for the
// lower, which the batch holds while it waits for the higher.
func testCleanupRacingAdmissions(t *testing.T, f *fixture) {
	const g = "concurrency: CleanupExpired racing admissions of its partition never removes a renewed counter, and " +
		"neither deadlocks"
	f.requireCleaner()
	const limit = 3
	maintenance := []raceOp{f.cleanupOp(10)}
	if _, ok := f.inst.Store.(ports.StatsReporter); ok {
		maintenance = append(maintenance, f.statsOp())
	}
	p := f.policy(limit, window)
	part := f.somePart(p)
	h, k := f.keyIn(p, part), f.keyIn(p, part)
	f.allow(f.check(p, h), limit-1, g)
	f.allow(f.check(p, k), limit-1, g)
	f.advance(window)
	// The renewals take the case's single-check path: a store whose
	// AdmitCheck renews optimistically, outside the locks cleanup takes,
	// must keep cleanup from removing a counter it is renewing.
	results := f.race(g, true, []worker{
		{name: "renewal of h", pinned: true, ops: []raceOp{f.checkOp(f.check(p, h), f.path)}},
		{name: "cleanup", wave: 1, watched: true, ops: maintenance},
		{name: "renewal of k", wave: 2, ops: []raceOp{f.checkOp(f.check(p, k), f.path)}},
	})
	f.logRace(fmt.Sprintf("%s %s while CleanupExpired(10) starts, then %s",
		f.log.check(f.check(p, h)), f.heldInClock(), f.log.check(f.check(p, k))), true, results)
	f.requireRaceDone(results, g)
	require.LessOrEqual(t, results[1][0].removed, 2, "%s: only two counters had expired", g)
	f.allow(f.checkCost(p, h, limit-1), 0, g+" (h's renewed counter is kept)")
	f.allow(f.checkCost(p, k, limit-1), 0, g+" (k's renewed counter is kept: cleanup must not remove a counter renewed "+
		"since it found it expired)")

	if f.parts == 1 {
		return
	}
	lo := f.somePart(p)
	hi := f.otherPart(p, lo)
	if lo > hi {
		lo, hi = hi, lo
	}
	held, x, y := f.keyIn(p, hi), f.keyIn(p, lo), f.keyIn(p, hi)
	batch := []domain.Check{f.check(p, x), f.check(p, y)}
	results = f.race(g, true, []worker{
		{name: "check of a key in the higher partition", pinned: true, ops: []raceOp{f.checkOp(f.check(p, held), f.path)}},
		{name: "cleanup", wave: 1, watched: true, ops: maintenance},
		{name: "batch across both partitions", wave: 2, ops: []raceOp{f.batchOp(batch)}},
	})
	f.logRace(fmt.Sprintf("%s %s while CleanupExpired(10) starts, then %s",
		f.log.check(f.check(p, held)), f.heldInClock(), f.log.batch(batch)), true, results)
	f.requireRaceDone(results, g)
	rem := f.admitAllowed(batch, g+" (the batch counted once)")
	require.Equal(t, []int64{limit - 2, limit - 2}, rem, g)
}

// testRecreatedUnderHeldRenewal pins the renewal of an expired key h in its
// clock read while CleanupExpired removes h and a second check of h
// creates it anew. A locking store keeps cleanup and the second check
// waiting on h's lock until the renewal has written. An optimistic store
// must find, when its held renewal writes, that h has changed since it
// read it, however h came back: a store whose write condition compares a
// version that starts again at 1 when a removed counter is created anew
// (an item or row whose version column is set on insert) finds the version
// it read, writes its renewal over the second check's, and loses that
// check's unit (the ABA problem).
func testRecreatedUnderHeldRenewal(t *testing.T, f *fixture) {
	const g = "concurrency: a renewal that read a counter which cleanup then removed and another check created anew " +
		"counts beside that check, never over it"
	f.requireCleaner()
	const limit = 3
	p := f.policy(limit, window)
	h := f.keyIn(p, f.somePart(p))
	c := f.check(p, h)
	f.allow(c, limit-1, g)
	f.advance(window)
	results := f.race(g, true, []worker{
		{name: "renewal of h", pinned: true, ops: []raceOp{f.checkOp(c, f.path)}},
		{name: "cleanup", wave: 1, watched: true, ops: []raceOp{f.cleanupOp(10)}},
		// Its clock reads are not held either: on an optimistic store it
		// runs to its end before the renewal is released.
		{name: "new check of h", wave: 2, watched: true, ops: []raceOp{f.checkOp(c, f.path)}},
	})
	f.logRace(fmt.Sprintf("%s %s while CleanupExpired(10) and then another check of h run",
		f.log.check(c), f.heldInClock()), true, results)
	f.requireRaceDone(results, g)
	f.allow(f.checkCost(p, h, limit-2), 0, g+" (both checks counted in h's new window: a write conditioned on a "+
		"version that restarts when a counter is created anew overwrote the other check's unit)")
}

// requireRaceDone checks that every operation of a race finished without
// an error, and that its checks and batches (the operations with an
// outcome; maintenance has none) were allowed.
func (f *fixture) requireRaceDone(results [][]result, guarantee string) {
	f.t.Helper()
	for i, rs := range results {
		for j, r := range rs {
			require.NoError(f.t, r.err, "%s: operation %d of worker %d failed", guarantee, j+1, i+1)
			if r.outcome != 0 {
				require.Equal(f.t, domain.Allowed, r.outcome, "%s: operation %d of worker %d is within the limit", guarantee, j+1, i+1)
			}
		}
	}
}

// raceHeldBatches races two batches of two, x and y (their keys named by
// xn and yn), after two single-key batches of their first keys, each held
// in the clock read until both batches wait on them, and requires that
// every batch finished allowed.
func (f *fixture) raceHeldBatches(t *testing.T, g string, round int, xn [2]string, x []domain.Check, yn [2]string, y []domain.Check) {
	t.Helper()
	results := f.race(g, true, []worker{
		{name: "holder of " + xn[0], ops: []raceOp{f.batchOp(x[:1])}},
		{name: "holder of " + yn[0], ops: []raceOp{f.batchOp(y[:1])}},
		{name: "batch [" + xn[0] + ", " + xn[1] + "]", wave: 1, ops: []raceOp{f.batchOp(x)}},
		{name: "batch [" + yn[0] + ", " + yn[1] + "]", wave: 1, ops: []raceOp{f.batchOp(y)}},
	})
	f.logRace(fmt.Sprintf("round %d: %s and %s, each %s, while %s and %s wait",
		round+1, f.log.batch(x[:1]), f.log.batch(y[:1]), f.heldInClock(), f.log.batch(x), f.log.batch(y)), true, results)
	for i, rs := range results {
		require.Len(t, rs, 1, "%s: worker %d finished its batch", g, i)
		require.NoError(t, rs[0].err, "%s: the store failed a valid batch", g)
		require.Equal(t, domain.Allowed, rs[0].outcome, "%s: every batch is within the limit", g)
	}
}

// testOtherKeysDecideOnTheirOwn races a check of an exhausted key with a
// check of a new one. Held inside their clock reads, both have read their
// counters before either decides: a store that keeps what an admission
// read anywhere another admission can write (one scratch buffer for the
// store, say) decides one check on the other's counter, and lets the
// exhausted key through or refuses the new one.
func testOtherKeysDecideOnTheirOwn(t *testing.T, f *fixture) {
	const g = "concurrency: admissions of different keys racing each decide on their own counter"
	p := f.policy(1, window)
	ks := f.keys(2)
	spent, fresh := f.check(p, ks[0]), f.check(p, ks[1])
	f.allow(spent, 0, g+" (the first key spends its limit)")
	results := f.race(g, true, []worker{
		{name: "exhausted key", ops: []raceOp{f.checkOp(spent, f.path)}},
		{name: "new key", ops: []raceOp{f.checkOp(fresh, f.path)}},
	})
	f.logRace(fmt.Sprintf("a check of an exhausted key racing a check of a new key via %s", f.path), true, results)
	r1, r2 := results[0][0], results[1][0]
	require.NoError(t, r1.err, "%s: the store failed a valid check", g)
	require.NoError(t, r2.err, "%s: the store failed a valid check", g)
	require.True(t, r1.outcome == domain.Denied && r1.reason == domain.QuotaExhausted,
		"%s: the exhausted key is denied for its quota, got %s (%s): it was decided on another key's counter", g, r1.outcome, r1.reason)
	require.Equal(t, domain.Allowed, r2.outcome,
		"%s: the new key is allowed, got %s (%s): it was decided on another key's counter", g, r2.outcome, r2.reason)
	f.deny(fresh, domain.QuotaExhausted, g+" (the new key's check was counted on its own counter)")
}
