package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// clampScenario checks, on a clock that steps back, that every time the
// store reads is clamped by every time it read before for the same key,
// whichever path, partition or outcome read it. (expiry's
// clock_stepping_back_moves_no_window_back checks one allowed check after
// the step.) Each case needs the harness to hand the suite its ManualClock
// as Instance.Clock, which the suite then moves back.
//
//   - A denial's time counts: a store that raises its clamp only when it
//     writes lets a key's time left grow after a denial.
//   - The clamp holds for every read after the step, not only the first:
//     a store that returns the clamped time but keeps the raw one as its
//     latest goes back on the second read.
//   - A batch clamps its time by every partition it touches: a store with
//     a clamp per partition that clamps a batch by its first key's
//     partition alone moves the other keys' windows back.
//   - Single checks and batches share one clamp: a store whose AdmitCheck
//     keeps a clamp of its own goes back to a time before a batch's.
//   - Cleanup reads the clamped time too: a store whose cleanup reads the
//     clock itself and stores what it read as the latest time lowers the
//     clamp for every check after it.
func clampScenario() scenario {
	return scenario{name: "clamp", cases: []testCase{
		{name: "a_denial_raises_the_clamp", single: true, run: testDenialRaisesClamp},
		{name: "every_read_after_a_step_back_is_clamped", single: true, run: testEveryReadClamped},
		{name: "a_batch_clamps_by_every_partition_it_touches", run: testBatchClampsEveryPartition},
		{name: "single_checks_and_batches_share_the_clamp", run: testPathsShareClamp},
		{name: "cleanup_keeps_the_clamp", run: testCleanupKeepsClamp},
		{name: "cleanup_reads_the_clamped_time", run: testCleanupReadsClampedTime},
	}}
}

// clampStep is how far the clock moves on before it steps back by half.
const clampStep = 10 * time.Minute

func (f *fixture) requireSteppableClock() {
	f.t.Helper()
	if f.inst.Clock == nil {
		f.skip("clamp: the suite steps back only a clock handed over as Instance.Clock, to check that the store clamps it")
	}
}

func testDenialRaisesClamp(t *testing.T, f *fixture) {
	const g = "clamp: a denial reads the store's time as an allowed check does, so the time left it reports never grows " +
		"after a clock steps back (a store that raises its clamp only when it writes goes back to its last write)"
	f.requireSteppableClock()
	p, k := f.policy(1, window), f.key()
	c := f.check(p, k)
	f.allow(c, 0, g)
	f.advance(clampStep)
	den := f.deny(c, domain.QuotaExhausted, g)
	f.requireRetry(den, window-clampStep, g)
	f.stepBack(clampStep / 2)
	den = f.deny(c, domain.QuotaExhausted, g+" (the clock stepped back)")
	f.requireRetry(den, window-clampStep, g+" (the retry time is the one the denial before it reported)")
}

func testEveryReadClamped(t *testing.T, f *fixture) {
	const g = "clamp: every read after a clock steps back is clamped, not only the first (a store that returns the " +
		"clamped time but keeps the clock's own as its latest goes back on the next read)"
	f.requireSteppableClock()
	const limit = 10
	p, k := f.policy(limit, window), f.key()
	c := f.check(p, k)
	f.allow(c, limit-1, g)
	f.advance(clampStep)
	f.allow(c, limit-2, g)
	f.stepBack(clampStep / 2)
	for i := range 3 {
		a := f.allow(c, int64(limit-3-i), g+" (the clock stepped back)")
		f.requireDuration(window-clampStep, a.ResetAfter, g+" (the window's time left never grows)")
	}
}

// testBatchClampsEveryPartition checks a key of one partition at a later
// time than a key of another, steps the clock back, and admits both in one
// batch, the earlier partition's key first.
func testBatchClampsEveryPartition(t *testing.T, f *fixture) {
	const g = "clamp: a batch's time is clamped by every partition it touches (a store that clamps a batch by its first " +
		"key's partition moves the windows of its other keys back)"
	f.requireSteppableClock()
	if f.parts == 1 {
		f.skip("clamp: the store has one capacity partition")
	}
	const limit = 10
	p := f.policy(limit, window)
	early := f.somePart(p)
	late := f.otherPart(p, early)
	a, b := f.keyIn(p, early), f.keyIn(p, late)
	f.allow(f.check(p, a), limit-1, g)
	f.advance(clampStep)
	f.allow(f.check(p, b), limit-1, g+" (a key of another partition, later)")
	f.stepBack(clampStep / 2)
	for i, order := range [][]domain.Check{{f.check(p, a), f.check(p, b)}, {f.check(p, b), f.check(p, a)}} {
		bd := f.admit(order, g+" (the clock stepped back)")
		require.Equal(t, domain.Allowed, bd.Outcome(), "%s: got %s", g, describeBatch(bd))
		ofA, _ := bd.Decisions()[i].Allowance()
		ofB, _ := bd.Decisions()[1-i].Allowance()
		require.Equal(t, []int64{int64(limit - 2 - i), int64(limit - 2 - i)}, []int64{ofA.Remaining, ofB.Remaining}, g)
		f.requireDuration(window-clampStep, ofA.ResetAfter, g+" (the earlier partition's key)")
		f.requireDuration(window, ofB.ResetAfter, g+" (the later partition's key, anchored at the latest time the "+
			"store read: its time left never grows past its whole window)")
	}
}

// testPathsShareClamp moves the clock on through one path, steps it back,
// and checks the same key through the other, both ways round.
func testPathsShareClamp(t *testing.T, f *fixture) {
	const g = "clamp: single checks and batches read one clamped time (a store whose AdmitCheck keeps a clamp of its " +
		"own goes back to a time before a batch's, and the other way round)"
	f.requireSteppableClock()
	if !f.caps.has[CheckAdmitter] {
		f.skip("clamp: the store has no single-check path")
	}
	const limit = 10
	p := f.policy(limit, window)
	for _, paths := range [][2]path{{viaBatchOfOne, viaAdmitCheck}, {viaAdmitCheck, viaBatchOfOne}} {
		k := f.key()
		c := f.check(p, k)
		f.allowVia(c, paths[1], limit-1, g)
		f.allowVia(c, paths[0], limit-2, g)
		f.advance(clampStep)
		a := f.allowVia(c, paths[0], limit-3, g)
		f.requireDuration(window-clampStep, a.ResetAfter, g)
		f.stepBack(clampStep / 2)
		a = f.allowVia(c, paths[1], limit-4, g+" (the clock stepped back, checked on the other path)")
		f.requireDuration(window-clampStep, a.ResetAfter, g+" (the window's time left never grows)")
		f.advance(clampStep / 2)
	}
}

// testCleanupKeepsClamp moves the clock on, steps it back and runs a
// cleanup that finds nothing to remove, then checks a denied key: its
// retry time is still the one it had before the step.
func testCleanupKeepsClamp(t *testing.T, f *fixture) {
	const g = "clamp: a cleanup after a clock steps back leaves the clamp where it was (a store whose cleanup stores " +
		"its own clock read as the latest time moves every window back)"
	f.requireSteppableClock()
	cleanup, ok := f.cleaner()
	if !ok {
		f.skip("clamp: the store does not implement ports.Cleaner")
	}
	p, k := f.policy(1, window), f.key()
	c := f.check(p, k)
	f.allow(c, 0, g)
	f.advance(clampStep)
	f.requireRetry(f.deny(c, domain.QuotaExhausted, g), window-clampStep, g)
	f.stepBack(clampStep / 2)
	n, err := cleanup(10)
	require.NoError(t, err, "%s: CleanupExpired failed after the clock stepped back", g)
	require.Zero(t, n, "%s: the only counter is active, so cleanup removes nothing", g)
	f.requireRetry(f.deny(c, domain.QuotaExhausted, g+" (the clock stepped back, then cleanup ran)"), window-clampStep,
		g+" (the retry time is the one the denial before the step reported)")
}
