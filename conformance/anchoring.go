package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// anchoringScenario checks that a batch is decided and stored at one time:
// the windows it anchors start at the clock sample it judged its other
// counters at. A store that reads its clock again for the write (a port of
// a key-value design that asks the server for the time per command: one
// read to judge the windows, another to stamp new ones) anchors them
// later than the batch was decided.
func anchoringScenario() scenario {
	return scenario{name: "anchoring", cases: []testCase{
		{name: "a_batch_anchors_new_windows_at_the_time_it_decided_at", run: testBatchAnchorsAtItsSample},
		{name: "a_batch_renewing_active_windows_keeps_where_they_end", run: testBatchRenewalKeepsWindowEnd},
	}}
}

// testBatchAnchorsAtItsSample applies a batch of a key whose window ends
// shortly and a new key, pinned just after its clock sample while time
// moves past that end. When the batch still counted the first key in its
// old window, it decided before that window ended, and so anchored the new
// key's window before then too: a window later that window has ended, and
// the new key renews. A store whose deciding sample came after the end
// (one that sampled again) renews the first key instead, and the case has
// nothing more to check; on a store that reads no ManualClock the batch
// runs to its end before time moves.
func testBatchAnchorsAtItsSample(t *testing.T, f *fixture) {
	const g = "anchoring: a batch is decided at one clock sample and anchors its new windows at that sample, not at a " +
		"later clock read made for the write"
	const soon, late = 30 * time.Second, time.Minute
	p := f.policy(2, window)
	a, b := f.key(), f.key()
	if q := f.otherPart(p, f.partOf(p, a)); q >= 0 {
		b = f.keyIn(p, q)
	}
	f.allow(f.check(p, a), 1, g)
	f.advance(window - soon)
	batch := []domain.Check{f.check(p, a), f.check(p, b)}
	nothing := func(context.Context) result { return result{} }
	r, _, held := f.pinnedRace(g, f.batchOp(batch), func() { f.advance(late) }, nothing)
	how := "a store that reads no ManualClock ran it to its end"
	if held {
		how = "pinned just after its clock sample"
	}
	f.log.add("race: batch %s via Admit, first key's window ending in %v, %s, while time moved %v on → %s",
		f.log.batch(batch), soon, how, late, describeResult(r))
	require.NoError(t, r.err, "%s: the store failed a valid batch", g)
	require.Equal(t, domain.Allowed, r.outcome, "%s: the batch is within its limits, got %s (%s)", g, r.outcome, r.reason)
	require.Len(t, r.remaining, len(batch), "%s: one allowance per check of the allowed batch", g)
	if r.remaining[0] != 0 {
		// Decided after the first key's window ended: it renewed, so a
		// check of it now counts in the window the batch anchored.
		require.Equal(t, int64(1), r.remaining[0], "%s: the first key either counts in its window or renews", g)
		f.allow(f.check(p, a), 0, g+" (the batch answered that it renewed the first key, so a check of it now counts "+
			"in the window the batch stored: a store that wrote the batch at its sample, in the old window, and "+
			"answered from a later clock read reports a renewal it never stored)")
		return
	}
	// The batch decided while the first key's window was active, at most
	// soon after the batch began; a window after that, the new key's
	// window has ended.
	f.advance(soon + window - late)
	f.allow(f.check(p, b), 1, g+" (the batch counted the first key in a window that ended "+soon.String()+
		" after the batch began, so the new key's window, anchored at the same time, has ended a window later)")
}

// testBatchRenewalKeepsWindowEnd counts a batch of two keys, counts it
// again half a window later, and checks the keys a window after the
// first: both windows have ended, and each key anchors a new one. A store
// whose batch path sets a counted key's expiry from the time of the write
// (a port of a key-value design whose batch script calls PEXPIRE on every
// key it counts, where its single-key script calls PEXPIREAT only on
// creation) slides an active window forward each time a batch counts it.
func testBatchRenewalKeepsWindowEnd(t *testing.T, f *fixture) {
	const g = "anchoring: a batch that counts in active windows keeps the ends they were anchored with (a fixed " +
		"window does not slide when counted)"
	const half = window / 2
	p := f.policy(5, window)
	a, b := f.key(), f.key()
	if q := f.otherPart(p, f.partOf(p, a)); q >= 0 {
		b = f.keyIn(p, q)
	}
	batch := []domain.Check{f.check(p, a), f.check(p, b)}
	require.Equal(t, []int64{4, 4}, f.admitAllowed(batch, g), "%s: new keys", g)
	f.advance(half)
	require.Equal(t, []int64{3, 3}, f.admitAllowed(batch, g), "%s: counted in the windows the first batch anchored", g)
	f.advance(half)
	require.Equal(t, []int64{4, 4}, f.admitAllowed(batch, g),
		"%s: a window after the first batch both windows have ended, so each key anchors a new one (a count below 4 "+
			"was counted in a window the second batch moved on)", g)
}
