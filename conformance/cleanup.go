package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// cleanupScenario checks [ports.Cleaner] on stores that offer it: cleanup
// removes expired counters, at most as many as asked each call, never an
// active one, and nothing when asked for zero or a negative number (then
// with [ports.ErrNegativeMax]); and it answers a done context in the order
// ports.Cleaner documents: a negative maximum first, then a zero maximum
// as (0, nil), and only then the context's error. A cleanup that passes a
// counter an admission holds goes on to the others, and counts only what
// it removed. (capacity/new_key_fits_after_cleanup checks that it frees
// their slots.)
func cleanupScenario() scenario {
	return scenario{name: "cleanup", cases: []testCase{
		{name: "removes_only_expired_counters", single: true, run: testCleanupRemovesOnlyExpired},
		{name: "window_end_is_the_boundary", single: true, run: testCleanupBoundary},
		{name: "one_call_removes_every_expired_counter_up_to_its_maximum", single: true, run: testCleanupRemovesUpToItsMax},
		{name: "a_cleanup_passing_a_held_counter_removes_the_others_it_may", run: testCleanupPassesHeldCounter},
		{name: "zero_or_negative_max_removes_nothing", single: true, run: testCleanupZeroOrNegative},
		{name: "done_context_is_checked_after_the_maximum", run: testCleanupDoneContext},
	}}
}

func (f *fixture) requireCleaner() func(int) (int, error) {
	f.t.Helper()
	c, ok := f.cleaner()
	if !ok {
		f.skip("cleanup: the store does not implement ports.Cleaner")
	}
	return c
}

// cleanAll calls cleanup with max until it removes nothing, checking each
// call's bound, and returns how many it removed in all.
func (f *fixture) cleanAll(cleanup func(int) (int, error), max int, guarantee string) int {
	f.t.Helper()
	removed := 0
	for range 1000 {
		n, err := cleanup(max)
		require.NoError(f.t, err, "%s: CleanupExpired failed", guarantee)
		require.True(f.t, n >= 0 && n <= max, "%s: CleanupExpired(%d) removed %d: at most max per call", guarantee, max, n)
		if n == 0 {
			return removed
		}
		removed += n
	}
	require.FailNow(f.t, guarantee, "CleanupExpired(%d) kept removing counters after %d", max, removed)
	return removed
}

func testCleanupRemovesOnlyExpired(t *testing.T, f *fixture) {
	const g = "cleanup: CleanupExpired removes expired counters, at most max per call, and never an active one"
	cleanup := f.requireCleaner()
	const long = 3
	shortP, longP := f.policy(2, time.Minute), f.policy(2, window)
	// The expired counters sit in two partitions where the store has
	// several, so that a maximum applied per partition shows: the last and
	// the first, so that a walk over the partitions that stops one short
	// at either end shows too.
	a, b := f.parts-1, 0
	shortKeys := append(f.keysIn(shortP, a, 3), f.keysIn(shortP, b, 2)...)
	longKeys := f.keys(long)
	for i := range max(len(shortKeys), long) {
		if i < len(shortKeys) {
			f.allow(f.check(shortP, shortKeys[i]), 1, g)
		}
		if i < long {
			f.allow(f.check(longP, longKeys[i]), 1, g)
		}
	}

	require.Zero(t, f.cleanAll(cleanup, len(shortKeys), g), "%s: nothing has expired yet", g)
	f.advance(time.Minute)
	require.Equal(t, len(shortKeys), f.cleanAll(cleanup, 2, g), "%s: repeated calls remove every expired counter, and only those", g)
	if s, ok := f.stats(); ok {
		require.Equal(t, int64(long), s.Entries, "%s: Stats.Entries after cleanup counts the active counters", g)
	}
	for _, k := range longKeys {
		f.allow(f.check(longP, k), 0, g+" (an active counter kept its count)")
	}
	for _, k := range shortKeys {
		f.allow(f.check(shortP, k), 1, g+" (a removed counter starts afresh)")
	}
}

func testCleanupBoundary(t *testing.T, f *fixture) {
	const g = "cleanup: a counter expires exactly at its window's end, for cleanup as for checks"
	cleanup := f.requireCleaner()
	edge := time.Millisecond
	if !f.inst.ExactTime {
		// A running clock cannot stop a millisecond short of the end.
		edge = time.Minute
	}
	p := f.policy(1, window)
	ks := f.keys(3)
	for _, k := range ks {
		f.allow(f.check(p, k), 0, g)
	}
	f.advance(window - edge)
	require.Zero(t, f.cleanAll(cleanup, 10, g), "%s: %v before the end every counter is still active", g, edge)
	for _, k := range ks[:1] {
		f.deny(f.check(p, k), domain.QuotaExhausted, g+" (the counter is still there, exhausted)")
	}
	f.advance(edge)
	require.Equal(t, len(ks), f.cleanAll(cleanup, 10, g), "%s: at the window's end every counter has expired", g)
	f.allow(f.check(p, ks[0]), 0, g+" (a removed counter starts afresh)")
}

func testCleanupZeroOrNegative(t *testing.T, f *fixture) {
	const g = "cleanup: CleanupExpired(0) removes nothing; a negative max is ports.ErrNegativeMax and removes nothing"
	cleanup := f.requireCleaner()
	p := f.policy(1, time.Minute)
	ks := f.keys(3)
	for _, k := range ks {
		f.allow(f.check(p, k), 0, g)
	}
	f.advance(time.Minute)
	n, err := cleanup(0)
	require.NoError(t, err, "%s: CleanupExpired(0)", g)
	require.Zero(t, n, "%s: CleanupExpired(0) removed %d", g, n)
	for _, max := range []int{-1, -1 << 31} {
		n, err := cleanup(max)
		require.Error(t, err, "%s: CleanupExpired(%d) must report the invalid maximum", g, max)
		require.ErrorIs(t, err, ports.ErrNegativeMax, "%s: CleanupExpired(%d) must report ports.ErrNegativeMax", g, max)
		require.ErrorIs(t, err, domain.ErrInvalidInput, "%s: a negative maximum is the caller's mistake", g)
		require.False(t, ports.MayHaveConsumedQuota(err), "%s: the error must say nothing was consumed", g)
		require.Zero(t, n, "%s: CleanupExpired(%d) removed %d", g, max, n)
	}
	require.Equal(t, len(ks), f.cleanAll(cleanup, 10, g), "%s: every expired counter was still there to remove", g)
}

// testCleanupDoneContext checks the order of [ports.Cleaner]'s checks
// against a done context, which zero_or_negative_max_removes_nothing (run
// with a live one) cannot see: a negative maximum is the caller's mistake
// whatever the context; a zero maximum asks for no work, so it is (0, nil)
// without a look at the context; any other maximum is refused with the
// context's error, removing nothing. (context/nil_context_is_invalid_input
// checks a nil context, and close/closed_store_fails_closed a closed
// store.)
func testCleanupDoneContext(t *testing.T, f *fixture) {
	const g = "cleanup: with a done context, CleanupExpired reports a negative maximum, answers a zero one with (0, nil), " +
		"and refuses any other with the context's error, removing nothing"
	f.requireCleaner()
	p := f.policy(1, time.Minute)
	ks := f.keys(3)
	for _, k := range ks {
		f.allow(f.check(p, k), 0, g)
	}
	f.advance(time.Minute)
	done, cancel := context.WithCancel(f.ctx)
	cancel()

	for _, max := range []int{-1, -1 << 31} {
		n, err := f.cleanupWith(done, "done ctx", max)
		require.ErrorIs(t, err, ports.ErrNegativeMax,
			"%s: CleanupExpired(done ctx, %d): a negative maximum is reported before the context is looked at", g, max)
		require.Zero(t, n, "%s: CleanupExpired(done ctx, %d) removed %d", g, max, n)
	}
	n, err := f.cleanupWith(done, "done ctx", 0)
	require.NoError(t, err, "%s: CleanupExpired(done ctx, 0) asks for no work, so it is (0, nil) without a look at the context", g)
	require.Zero(t, n, "%s: CleanupExpired(done ctx, 0) removed %d", g, n)
	for _, max := range []int{1, 10} {
		n, err := f.cleanupWith(done, "done ctx", max)
		require.ErrorIs(t, err, context.Canceled,
			"%s: CleanupExpired(done ctx, %d) must refuse with the context's error: the caller has given up", g, max)
		require.Zero(t, n, "%s: CleanupExpired(done ctx, %d) removed %d", g, max, n)
	}
	cleanup, _ := f.cleaner()
	require.Equal(t, len(ks), f.cleanAll(cleanup, 10, g), "%s: every expired counter was still there to remove", g)
}
