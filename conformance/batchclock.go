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
	var lo, hi int
	var loFirst bool
	for race := range 2 * rounds {
		target := race % 2
		if target == 0 {
			lo, hi = 0, 0
			if f.parts > 1 {
				lo = f.somePart(p)
				hi = f.otherPart(p, lo)
			}
		}
		a, b := f.keyOrderedPair(p, lo, hi, target == 1, &loFirst)
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

// keyOrderedPair returns two new keys of p, one in partition lo and one
// in hi, a sorting before b: the batch's caller order is its key order.
// With match set, the key in lo sorts first exactly when *loFirst says, as
// it did in the round's first race; without, *loFirst records whether it
// does. So each round checks the key a store locks second, whether it
// locks in key order or by partition, ascending or descending: its first
// race checks a, and its second b of a pair whose partitions lie the same
// way. With two random keys a round checked the key that a store locking
// in key order locked first, in both races, one time in four, and a store
// that samples its clock after its first lock passed the case when every
// round did (about one run in 64 on each path).
func (f *fixture) keyOrderedPair(p domain.Policy, lo, hi int, match bool, loFirst *bool) (a, b domain.SubjectKey) {
	f.t.Helper()
	draw := func(part int) domain.SubjectKey {
		for range 1000 * f.parts {
			if k := randomKey(); f.partOf(p, k) == part {
				return k
			}
		}
		require.FailNow(f.t, "harness: PartitionOf", "no random key landed in partition %d of %d", part, f.parts)
		return domain.SubjectKey{}
	}
	// A pair lies one way or the other; a partition function that does
	// not tie partitions to key order gives the way wanted half the time.
	for range 64 {
		a, b = draw(lo), draw(hi)
		if !f.less(p, a, b) {
			a, b = b, a
		}
		first := f.partOf(p, a) == lo
		if match && first != *loFirst {
			continue
		}
		*loFirst = first
		f.log.nameKey(a, f.partOf(p, a), f.parts)
		f.log.nameKey(b, f.partOf(p, b), f.parts)
		return a, b
	}
	require.FailNow(f.t, "harness: PartitionOf", "no pair of keys in partitions %d and %d lies as the round's first did", lo, hi)
	return a, b
}

// less reports whether j's counter key under p sorts before k's.
func (f *fixture) less(p domain.Policy, j, k domain.SubjectKey) bool {
	return domain.NewCounterKey(p.Fingerprint(), j).Compare(domain.NewCounterKey(p.Fingerprint(), k)) < 0
}
