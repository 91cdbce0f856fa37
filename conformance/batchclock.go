package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// testBatchClockReadWithLocksHeld is testClockReadWithLocksHeld for a
// batch of two keys that share no lock (in two partitions, where the store
// has several): the batch is pinned just after its clock sample, time
// moves on, and a single check of one of the batch's keys runs. A store
// that samples its clock with only its first lock held (the clock read
// placed after the first partition's lock, or clamped under it, with the
// rest locked after) keeps out a check of the first key but not of the
// second, which counts first, at the later time; the batch then counts
// that key at the earlier time, and reports more time left than the
// check before it. Which key a store locks first the suite cannot know,
// so the race runs once for each, and in three rounds of fresh keys: a
// round whose check a loaded machine stalls until the batch is released
// (after maxHold) shows nothing, and the next round still can.
func testBatchClockReadWithLocksHeld(t *testing.T, f *fixture) {
	const g = "concurrency: a batch samples the clock with every one of its locks held, so a check that counts after " +
		"another in a window never reports more time left than it did"
	const limit, late = 5, time.Minute
	p := f.policy(limit, window)
	const rounds = 3
	for race := range 2 * rounds {
		target := race % 2
		a := f.key()
		b := f.key()
		if q := f.otherPart(p, f.partOf(p, a)); q >= 0 {
			b = f.keyIn(p, q)
		}
		batch := []domain.Check{f.check(p, a), f.check(p, b)}
		c := batch[target]
		f.allow(batch[0], limit-1, g)
		f.allow(batch[1], limit-1, g)
		f.advance(time.Minute)
		first := f.batchOp(batch)
		r1, r2, held := f.pinnedRace(g, first, func() { f.advance(late) }, f.checkOp(c, f.path))
		how := "a store that reads no ManualClock ran the batch to its end"
		if held {
			how = "the batch pinned just after its clock sample"
		}
		f.log.add("race: batch %s via Admit, %s, while time moved %v on and a check of its key %d ran via %s → batch %s; check %s",
			f.log.batch(batch), how, late, target+1, f.path, describeResult(r1), describeResult(r2))
		for i, r := range []result{r1, r2} {
			require.NoError(t, r.err, "%s: the store failed a valid admission", g)
			require.Equal(t, domain.Allowed, r.outcome, "%s: admission %d of 2 is within the limit, got %s (%s)", g, i+1, r.outcome, r.reason)
		}
		require.Len(t, r1.resets, len(batch), "%s: one allowance per check of the allowed batch", g)
		// Both counted key target into its one window: the one left with
		// fewer units counted last, so at the later time.
		type count struct {
			remaining int64
			reset     time.Duration
		}
		earlier, later := count{r1.remaining[target], r1.resets[target]}, count{r2.remaining[0], r2.reset}
		if earlier.remaining < later.remaining {
			earlier, later = later, earlier
		}
		require.Equal(t, []int64{limit - 2, limit - 3}, []int64{earlier.remaining, later.remaining},
			"%s: the batch and the check each count one unit of key %d the other saw", g, target+1)
		require.LessOrEqual(t, later.reset, earlier.reset, "%s: of the batch and the check of its key %d, the one that "+
			"counted last (remaining %d) reports %v left, more than the %v the other (remaining %d) reported: it decided "+
			"at a time that had passed before the other wrote (read the clock after taking every lock of the batch, not "+
			"after the first)", g, target+1, later.remaining, later.reset, earlier.reset, earlier.remaining)
		other := batch[1-target]
		f.allow(f.checkCost(p, c.SubjectKey(), limit-3), 0, g+" (every unit of the raced key was counted once)")
		f.allow(f.checkCost(p, other.SubjectKey(), limit-2), 0, g+" (the batch counted its other key once)")
	}
}
