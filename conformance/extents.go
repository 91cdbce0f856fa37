package conformance

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// extentsScenario checks guarantees at sizes the other scenarios stay
// below, where a store's cheaper representation or bookkeeping parts
// from the rule:
//
//   - CleanupExpired's max is an int: a maintenance loop may pass
//     math.MaxInt for "every expired counter". A store that narrows it to
//     32 bits (an int32 parameter, a 32-bit LIMIT) turns 2^32 into 0 and
//     math.MaxInt into -1, and removes nothing.
//   - A capacity denial's retry time is the earliest expiry in the
//     partition (SPEC section 2), among every counter it holds. A store
//     that reads a sample of its counters (the newest few, the oldest
//     few) instead of an expiry index names a later end once the
//     partition holds more counters than the sample, which a partition of
//     four never does.
//   - CleanupExpired removes every expired counter up to max in one call.
//     A store that deletes through one backend call of fixed size (25
//     items, DynamoDB's BatchWriteItem) and returns that count removes
//     fewer than max while expired counters remain, which three counters
//     never show.
//   - A batch is all-or-nothing at any size. A store that writes a batch
//     in transactions of 25 items (DynamoDB's TransactWriteItems limit),
//     each decided and committed before the next, leaves the first chunk
//     counted when a check past it is refused, which a batch of eight
//     never shows; one that writes a batch through one call of 25 items
//     and drops the items it returns unprocessed counts no check past
//     the 25th.
func extentsScenario() scenario {
	return scenario{name: "extents", cases: []testCase{
		{name: "cleanup_with_a_maximum_beyond_32_bits_removes_every_expired_counter",
			run: testCleanupWideMaximum},
		{name: "capacity_retry_is_the_earliest_end_among_many_counters",
			opts: manyCountersOptions, run: testRetryAmongManyCounters},
		{name: "cleanup_removes_more_than_one_backend_batch_in_a_call",
			opts: wideOptions, run: testCleanupBeyondBackendBatch},
		{name: "a_full_size_batch_refused_at_its_last_check_counts_nothing",
			opts: wideOptions, run: testFullBatchRefusedAtEnd},
	}}
}

// wideOptions give a partition room for more counters than a backend
// call of 25 items, and batches longer than one transaction of 25.
var wideOptions = Options{Capacity: 40, MaxBatchSize: 32}

// wideExpired is how many counters testCleanupBeyondBackendBatch lets
// end together: beyond 25 and 32, and no multiple of a round chunk size.
const wideExpired = 37

// testCleanupBeyondBackendBatch lets 37 counters of one partition end
// beside one that runs on, and requires one CleanupExpired call with a
// larger max to remove all 37.
func testCleanupBeyondBackendBatch(t *testing.T, f *fixture) {
	const g = "extents: one CleanupExpired call removes every expired counter up to max (a store that deletes through " +
		"one backend call of 25 items removes fewer while expired counters remain)"
	cleanup := f.requireCleaner()
	p, long := f.policy(1, window), f.policy(1, 100*window)
	part := f.somePart(p)
	f.allow(f.check(long, f.keyIn(long, part)), 0, g+" (a counter that runs on)")
	for range wideExpired {
		f.allow(f.check(p, f.keyIn(p, part)), 0, g)
	}
	f.advance(window)
	const max = 1000
	n, err := cleanup(max)
	require.NoError(t, err, "%s: CleanupExpired(%d) failed", g, max)
	require.Equal(t, wideExpired, n, "%s: CleanupExpired(%d) removes the %d counters that have ended, in one call",
		g, max, wideExpired)
	n, err = cleanup(max)
	require.NoError(t, err, "%s: CleanupExpired(%d) failed", g, max)
	require.Zero(t, n, "%s: nothing else has ended", g)
}

// testFullBatchRefusedAtEnd spends a key of a limit-one policy, admits a
// batch of the largest size whose last check names that key, and requires
// the batch refused at its last check with none of its 31 new keys
// counted: the same 31 keys are then allowed as a batch, each with its
// whole limit, and that batch counted its last check too (a store whose
// batch write drops the items past the 25th does not).
func testFullBatchRefusedAtEnd(t *testing.T, f *fixture) {
	const g = "extents: a batch of the largest size refused at its last check counts none of its checks (a store that " +
		"commits a batch in transactions of 25 items counts the first 25)"
	p := f.policy(1, window)
	part := f.somePart(p)
	spent := f.keyIn(p, part)
	f.allow(f.check(p, spent), 0, g+" (the key the batch's last check names, spent)")
	fresh := make([]domain.Check, f.opts.MaxBatchSize-1)
	for i := range fresh {
		fresh[i] = f.check(p, f.keyIn(p, part))
	}
	f.admitDenied(append(slices.Clone(fresh), f.check(p, spent)), len(fresh), domain.QuotaExhausted, g)
	for i, rem := range f.admitAllowed(fresh, g+" (the refused batch's new keys, again)") {
		require.Zero(t, rem, "%s: check %d of the refused batch was counted", g, i)
	}
	// The allowed batch counted every check, its last (past any chunk of
	// 25 a store writes in one call) too.
	last := len(fresh) - 1
	f.deny(fresh[last], domain.QuotaExhausted, fmt.Sprintf("%s (check %d of the allowed batch was counted)", g, last))
}

// manyCountersOptions give a partition more counters than a sample of
// eight, and a number no sample rounds to.
var manyCountersOptions = Options{Capacity: 12, MaxBatchSize: 8}

// wideMaximums are cleanup maximums that a 32-bit integer does not hold:
// each wraps to a negative number, zero or one.
func wideMaximums() []int {
	maxes := []int{math.MaxInt}
	if strconv.IntSize == 64 {
		w := uint64(1) << 32
		maxes = append(maxes, int(w>>1), int(w), int(w+1))
	}
	return maxes
}

// testCleanupWideMaximum lets three counters end beside one that runs on,
// for each wide maximum, and requires CleanupExpired(max) to remove the
// three in one call.
func testCleanupWideMaximum(t *testing.T, f *fixture) {
	const g = "extents: CleanupExpired with a maximum beyond 32 bits removes every expired counter, at most max (a store " +
		"that narrows max to 32 bits removes none, or one)"
	cleanup := f.requireCleaner()
	const ended = 3
	p, long := f.policy(1, window), f.policy(1, 100*window)
	f.allow(f.check(long, f.key()), 0, g+" (a counter that runs on)")
	for _, max := range wideMaximums() {
		for range ended {
			f.allow(f.check(p, f.key()), 0, g)
		}
		f.advance(window)
		n, err := cleanup(max)
		require.NoError(t, err, "%s: CleanupExpired(%d) failed", g, max)
		require.Equal(t, ended, n, "%s: CleanupExpired(%d) removes the %d counters that have ended, and only them",
			g, max, ended)
	}
	n, err := cleanup(math.MaxInt)
	require.NoError(t, err, "%s: CleanupExpired(%d) failed", g, math.MaxInt)
	require.Zero(t, n, "%s: nothing else has ended", g)
}

// testRetryAmongManyCounters fills a partition of twelve with counters
// created together whose ends run backwards (the last created ends
// first), then, round after round, asks for a capacity denial's retry
// time, lets the earliest counter end, removes it and puts a long-lived
// counter in its slot. The earliest end thus moves from the newest
// counter to the oldest, and from among the first counters created to
// among the last: a store that reads the newest eight, or the oldest
// eight, names a later end in some round.
func testRetryAmongManyCounters(t *testing.T, f *fixture) {
	const g = "extents: a capacity denial's retry time is the earliest end among every counter of the partition, however " +
		"many it holds"
	cleanup := f.requireCleaner()
	c := f.opts.Capacity
	const step = time.Minute
	probe := f.policyOf("conformance.extents", "probe", 1, window)
	filler := f.policyOf("conformance.extents", "filler", 1, 3*window)
	part := f.somePart(probe)
	for i := range c {
		// Created i-th, ending window+(c-1-i) steps on: the last ends first.
		p := f.policyOf("conformance.extents", fmt.Sprintf("end-%d", i), 1, window+time.Duration(c-1-i)*step)
		f.allow(f.check(p, f.keyIn(p, part)), 0, g)
	}
	var elapsed time.Duration
	for r := range c - 1 {
		// The counter created (c-1-r)-th ends first now.
		end := window + time.Duration(r)*step
		round := fmt.Sprintf(" (round %d of %d)", r+1, c-1)
		f.requireOccupancy(occupancy{part: c}, g+round)
		den := f.deny(f.check(probe, f.keyIn(probe, part)), domain.StorageCapacity, g+round+" (the partition is full)")
		if retry, ok := den.RetryAfter(); ok {
			f.requireDuration(end-elapsed, retry, g+round+fmt.Sprintf(" (the counter created %s ends first, "+
				"%v from now)", ordinal(c-r), end-elapsed))
		}
		f.advance(end - elapsed)
		elapsed = end
		require.Equal(t, 1, f.cleanAll(cleanup, 1, g+round), "%s%s: exactly one counter has ended", g, round)
		f.admitNew(filler, part, 1, g+round+" (a long-lived counter in the freed slot)")
	}
}

// ordinal returns n as "1st", "2nd", "3rd", "4th" and so on.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
