package conformance

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// clampRacesScenario checks that admissions racing on different keys
// never lower the store's clamp (SPEC section 3: time never goes backwards
// for a key; section 4: the clock is clamped so that a partition never
// sees time go backwards). A store keeping its latest time in one word
// shared by every admission, raised with a read-modify-write that is not
// atomic (load the latest time, read the clock, store the larger), lets
// an admission that loaded the latest time before a racing one raised it
// store its own, older time over the newer: the clamp steps back, and once
// the clock steps back too, a window anchored in the racing admission's
// partition begins before a time that partition has already read.
// (clampScenario checks the clamp one admission at a time.)
func clampRacesScenario() scenario {
	return scenario{name: "clampraces", cases: []testCase{
		{name: "an_admission_racing_a_later_one_never_lowers_the_clamp", single: true, run: testClampNotLoweredByRace},
	}}
}

// testClampNotLoweredByRace pins a check of key a just after its clock
// sample, moves time on, and runs a check of key b (in another partition,
// when the store has two) to its end, or until it waits for the first.
// Then the clock steps back, a new key of b's partition is anchored, and
// the clock moves on to where b read it: the new key's time left must be
// its whole window, anchored at the latest time the partition had read.
func testClampNotLoweredByRace(t *testing.T, f *fixture) {
	const g = "clampraces: an admission racing a later one on another key never lowers the store's clamp, so after " +
		"the clock steps back no key's time left grows past its window (a latest time raised by a load, a clock " +
		"read and a store that are not one atomic step keeps the older of two racing times)"
	f.requireSteppableClock()
	const limit = 10
	p := f.policy(limit, window)
	var a, b domain.SubjectKey
	if f.parts > 1 {
		pa := f.somePart(p)
		a, b = f.keyIn(p, pa), f.keyIn(p, f.otherPart(p, pa))
	} else {
		a, b = f.key(), f.key()
	}
	ca, cb := f.check(p, a), f.check(p, b)
	r1, r2, held := f.pinnedRace(g, f.checkOp(ca, f.path), func() { f.advance(clampStep) }, f.checkOp(cb, f.path))
	how := "a store that reads no ManualClock ran the first check to its end"
	if held {
		how = "the first check pinned just after its clock sample"
	}
	f.log.add("race: check %s via %s, %s, while time moved %v on and a check of %s ran → first %s; second %s",
		f.log.check(ca), f.path, how, clampStep, f.log.check(cb), describeResult(r1), describeResult(r2))
	for i, r := range []result{r1, r2} {
		require.NoError(t, r.err, "%s: the store failed a valid check", g)
		require.Equal(t, domain.Allowed, r.outcome, "%s: check %d of 2 is a key's first, got %s (%s)", g, i+1, r.outcome, r.reason)
		require.Equal(t, []int64{limit - 1}, r.remaining, "%s: check %d of 2 is its key's first", g, i+1)
	}
	require.Equal(t, window, r2.reset, "%s: the second check anchored its key's window", g)
	f.stepBack(clampStep / 2)
	// A new key of b's partition, anchored now: at the latest time that
	// partition read, b's, however far the clock stepped back. The domain
	// reads a key's own window start as a floor for its time, so b's time
	// left cannot show a lowered clamp; a window anchored after the step
	// does.
	var c domain.SubjectKey
	if f.parts > 1 {
		c = f.keyIn(p, f.partOf(p, b))
	} else {
		c = f.key()
	}
	cc := f.check(p, c)
	f.allow(cc, limit-1, g+" (a new key, after the clock stepped back)")
	f.advance(clampStep / 2)
	ac := f.allow(cc, limit-2, g+" (the clock is back where the second check read it)")
	f.requireDuration(window, ac.ResetAfter, fmt.Sprintf("%s (a key anchored after the clock stepped back %v is "+
		"anchored at the latest time the store had read, the second check's, and the clock is there again now, so its "+
		"time left is its whole window; less is a window anchored before that time: the racing first check lowered "+
		"the clamp to its own, older sample)", g, clampStep/2))
	ab := f.allow(cb, limit-2, g)
	f.requireDuration(window, ab.ResetAfter, g+" (the second check's key, anchored at the latest time)")
	aa := f.allow(ca, limit-2, g)
	require.LessOrEqual(t, aa.ResetAfter, window, "%s: the first key's time left never grows past its window", g)
}
