package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// samplingScenario checks that an admission decides on a clock sample
// taken after every write it observes (SPEC section 3: the store samples
// its authoritative clock after all locks are held; ports.Store: an
// optimistic store reads its clock after its read, on every attempt).
//
// A store that samples its clock when its transaction begins (PostgreSQL's
// now(), MySQL's statement time taken before SELECT ... FOR UPDATE, or a
// Go store that reads and clamps its clock before it takes its locks)
// decides on a time from before the writes it then reads. The clamp can
// hide the stale sample from a check of the times alone: a store that
// raises its sample to the latest time any admission has seen only once
// the sample is back in its hands finds the later time there, when the
// sampling admission was held just after its read. The case therefore
// counts the clock reads: an admission that counts after another, whose
// whole admission ran while the first was held just after its first
// sample, must have sampled the clock again, with its key's lock held or
// on the retry its failed conditional write forced.
func samplingScenario() scenario {
	return scenario{name: "sampling", cases: []testCase{
		{name: "a_check_that_counts_after_another_sampled_its_clock_after_that_one_wrote", single: true,
			run: testSampleAfterObservedWrite},
		{name: "a_cleanup_that_waits_for_a_check_removes_only_what_ended_before_that_check_decided", single: true,
			run: testCleanupWaitsForPinnedCheck},
		{name: "a_check_answers_from_the_sample_it_counted_at", single: true, run: testAnswerFromStandingSample},
	}}
}

// testSampleAfterObservedWrite pins a first check of a key just after its
// clock sample, moves time a minute on, and runs a second check of the key
// to its end (or until it waits for the first). A store that holds the
// key's lock while it samples keeps the second waiting, and the first
// counts first; an optimistic store lets the second write, and the first
// finds the counter changed and starts again with a new sample. Either
// way, a first check that counts after the second has read the clock
// again after its pinned sample. One that did not decided on a time from
// before the second check's write, which it counted on.
func testSampleAfterObservedWrite(t *testing.T, f *fixture) {
	const g = "sampling: a check that counts after another decided on a clock sample taken after that one's write " +
		"(sample the clock with every lock held, or again on every attempt of an optimistic write)"
	const limit, late = 5, time.Minute
	p, k := f.policy(limit, window), f.key()
	c := f.check(p, k)
	f.allow(c, limit-1, g)
	r1, r2, held, later := f.pinnedRaceReads(g, f.checkOp(c, f.path), func() { f.advance(late) }, f.checkOp(c, f.path))
	how := "a store that reads no ManualClock ran the first check to its end"
	if held {
		how = fmt.Sprintf("the first check pinned just after its clock sample, which it read %d more times", later)
	}
	f.log.add("race: check %s via %s, %s, while time moved %v on and a second check ran → first %s; second %s",
		f.log.check(c), f.path, how, late, describeResult(r1), describeResult(r2))
	for i, r := range []result{r1, r2} {
		require.NoError(t, r.err, "%s: the store failed a valid check", g)
		require.Equal(t, domain.Allowed, r.outcome, "%s: check %d of 2 is within the limit, got %s (%s)", g, i+1, r.outcome, r.reason)
	}
	require.ElementsMatch(t, []int64{limit - 2, limit - 3}, []int64{r1.remaining[0], r2.remaining[0]},
		"%s: each check counts one unit the other saw", g)
	if held && r1.remaining[0] < r2.remaining[0] {
		require.Positive(t, later, "%s: the pinned first check counted after the second (remaining %d, the second's %d), "+
			"whose whole admission ran after the first had sampled the clock, yet it never read the clock again: it "+
			"decided on a time from before the write it counted on (a sample taken before the key's lock, or before "+
			"the read)", g, r1.remaining[0], r2.remaining[0])
	}
	f.allow(f.checkCost(p, k, limit-3), 0, g+" (every unit was counted once)")
}

// testCleanupWaitsForPinnedCheck pins a check of an exhausted key just
// after its clock sample, half a window before the key's window ends,
// moves time past that end and runs a cleanup. A store that samples the
// clock with the key's locks held keeps the cleanup waiting until the
// check has been denied; an optimistic store lets the cleanup remove the
// counter, and the check, finding it changed, starts again at the later
// time and anchors a new window then. Either way the window the key has
// afterwards began no earlier than the cleanup's time, and a check now
// reports a whole window to reset.
//
// A store that reads its clock under a store-wide mutex of its own (one
// that clamps the clock, say) before it takes its key locks, and whose
// cleanup takes its locks and then reads the clock through the same
// mutex, lets the cleanup take the lock the pinned check needs while the
// check still holds the mutex: once released, the check waits for the
// cleanup, finds the key removed and anchors a new window at its pinned
// sample, in the middle of the window it should have been denied in. The
// admission-against-admission pinned case cannot see this order: its
// rival waits on the mutex, not on a key lock. The key is in the first
// partition, the one a cleanup going partition by partition in ascending
// order, each under its lock, takes first.
func testCleanupWaitsForPinnedCheck(t *testing.T, f *fixture) {
	const g = "sampling: a check that counts after a cleanup removed its key's ended window decided after that cleanup " +
		"(sample the clock with every lock held, not under a store-wide mutex taken before the locks)"
	if _, ok := f.cleaner(); !ok {
		f.skip("sampling: the store does not implement ports.Cleaner")
	}
	const limit, half = 2, window / 2
	p := f.policy(limit, window)
	// The first partition, which a cleanup that goes partition by
	// partition in ascending order locks first.
	c := f.check(p, f.keyIn(p, 0))
	f.allow(c, limit-1, g)
	f.allow(c, 0, g)
	f.advance(half)
	r1, r2, held := f.pinnedRace(g, f.checkOp(c, f.path), func() { f.advance(half) }, f.cleanupOp(limit))
	how := "a store that reads no ManualClock ran the check to its end"
	if held {
		how = "the check pinned just after its clock sample"
	}
	f.log.add("race: check %s via %s of an exhausted key, %s, while time moved %v on to the window's end and a "+
		"cleanup ran → check %s; cleanup %s", f.log.check(c), f.path, how, half, describeResult(r1), describeResult(r2))
	require.NoError(t, r1.err, "%s: the store failed a valid check", g)
	require.NoError(t, r2.err, "%s: the store failed a valid cleanup", g)
	if r1.outcome != domain.Allowed {
		require.Equal(t, domain.Denied.String()+" ("+domain.QuotaExhausted.String()+")", r1.outcome.String()+" ("+r1.reason.String()+")",
			"%s: a check of an exhausted key decided before its window ended is denied for quota", g)
	}
	// The key's window, whoever anchored it, began at or after the
	// cleanup's time, which is now: a whole window is left.
	want, why := limit-int64(1), " (the denied check consumed nothing, and the key's window has ended)"
	if r1.outcome == domain.Allowed {
		want, why = limit-2, " (the allowed check counted in the window it anchored)"
	}
	a := f.allow(c, want, g+why)
	f.requireDuration(window, a.ResetAfter, g+" (the window the key has now began when the cleanup ran or later: a "+
		"check that waited for the cleanup and anchored its window at the sample it took before the cleanup's, half a "+
		"window earlier, counted in the window it should have been denied in)")
}

// testAnswerFromStandingSample pins a check of a key just after its clock
// sample, half a minute before the key's window ends, runs a second check
// of the key (an optimistic store lets it write; a locking store keeps it
// waiting), moves time a minute on, past the window's end, and releases
// the first. Whichever check counts first counts in the old window, with
// its end half a minute away, and the other, deciding after that end,
// renews: each answer is what the sample it counted at gave.
//
// An optimistic store whose first attempt finds the counter changed
// starts again with a new sample, and counts at that one. One that
// answers from the sample of its first attempt (kept from before its
// retry loop, or replayed on the caller's batch) after a later attempt
// stood judges the counter the later attempt read at a time before that
// attempt: here it reports the old window full, a denial, beside the
// renewal it wrote. The first sampling case cannot show this: its second
// check runs after time has moved, so the clamp lifts the pinned first
// attempt's sample to the second attempt's time.
func testAnswerFromStandingSample(t *testing.T, f *fixture) {
	const g = "sampling: a check answers from the clock sample it counted at, on an optimistic store the sample of " +
		"the attempt that stood, not of its first"
	const limit, soon, late = 2, 30 * time.Second, time.Minute
	p, k := f.policy(limit, window), f.key()
	c := f.check(p, k)
	f.allow(c, limit-1, g)
	f.advance(window - soon)
	nothing := func() {}
	r1, r2, held, _ := f.pinnedRaceStaged(g, f.checkOp(c, f.path), nothing, f.checkOp(c, f.path), func() { f.advance(late) })
	how := "a store that reads no ManualClock ran the first check to its end before time moved"
	if held {
		how = "the first check pinned just after its clock sample while the second ran or waited, then time moved " + late.String() + " on"
	}
	f.log.add("race: two checks %s via %s, the window ending in %v, %s → first %s; second %s",
		f.log.check(c), f.path, soon, how, describeResult(r1), describeResult(r2))
	for i, r := range []result{r1, r2} {
		require.NoError(t, r.err, "%s: the store failed a valid check", g)
		require.Equal(t, domain.Allowed, r.outcome,
			"%s: check %d of 2 counts either in the old window, which has a unit left, or in a new one after it ended; "+
				"got %s (%s): a check that counted in a later attempt answered as of an earlier sample", g, i+1, r.outcome, r.reason)
	}
	old, renewed := r1, r2
	if r1.remaining[0] > r2.remaining[0] {
		old, renewed = r2, r1
	}
	require.Equal(t, []int64{0, limit - 1}, []int64{old.remaining[0], renewed.remaining[0]},
		"%s: one check takes the old window's last unit, the other renews after it ended", g)
	f.requireDuration(soon, old.reset, g+" (the check that counted in the old window answers its end)")
	f.requireDuration(window, renewed.reset, g+" (the check that renewed answers a whole new window)")
	f.allow(c, 0, g+" (the renewed window holds the renewing check's unit)")
}
