package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// lifetimeScenario checks that a counter lives exactly as long as its own
// window, however the store keeps the time a key lives apart from the
// window it counts in, as stores over a cache or key-value backend do with
// a key's time to live:
//
//   - A window renewed in place lasts its whole new window. A store that
//     sets a key's time to live only when it creates the key (INCRBY, then
//     EXPIRE when the count is new), rounded to whole seconds, keeps the
//     first window's expiry for a key renewed before the backend deleted
//     it, and the backend then deletes the renewed counter early.
//   - A counter stays active to the last microsecond of its window: a
//     store that reads a key's time left in whole milliseconds (PTTL)
//     finds none in the window's last millisecond, and one that sets an
//     absolute expiry in whole milliseconds (PEXPIREAT) ends a window
//     that started between two milliseconds early.
//   - Each key of a batch lives as long as its own policy's window: a
//     script that sets every key's time to live from the batch's first
//     argument deletes a longer window's counter with the shorter one's.
func lifetimeScenario() scenario {
	return scenario{name: "lifetime", cases: []testCase{
		{name: "renewal_outlives_the_first_windows_rounded_ttl", single: true, run: testRenewalOutlivesRoundedTTL},
		{name: "counter_is_active_to_its_last_microsecond", single: true, run: testActiveToLastMicrosecond},
		{name: "each_key_of_a_batch_keeps_its_own_window", run: testBatchKeysKeepOwnWindows},
	}}
}

// testRenewalOutlivesRoundedTTL renews a window whose length is not a whole
// number of seconds a quarter second after its end: before a time to live
// rounded up to the next second (or to the nearest one) has run out, so a
// store that keeps that first time to live for the renewed key loses the
// counter a second into its new window. The last check comes a minute
// before the renewed window ends, so a clock that keeps running passes it
// too.
func testRenewalOutlivesRoundedTTL(t *testing.T, f *fixture) {
	const g = "lifetime: a window renewed in place lasts its whole new window, whatever time to live the key had " +
		"before (a store that sets the time to live only when it creates a key, in whole seconds, loses the renewal early)"
	const w = window + 500*time.Millisecond
	p, k := f.policy(1, w), f.key()
	c := f.check(p, k)
	f.allow(c, 0, g)
	if f.inst.ExactTime {
		// Half a second before the end, and past a time to live rounded
		// down to whole seconds: the counter still counts.
		f.advance(w - 250*time.Millisecond)
		den := f.deny(c, domain.QuotaExhausted, g+" (the first window's last half second)")
		f.requireRetry(den, 250*time.Millisecond, g)
		f.advance(500 * time.Millisecond)
	} else {
		f.advance(w + 250*time.Millisecond)
	}
	a := f.allow(c, 0, g+" (the expired window renews)")
	f.requireDuration(w, a.ResetAfter, g+" (the renewed window starts at the renewing check)")
	f.advance(w - time.Minute)
	den := f.deny(c, domain.QuotaExhausted, g+" (a minute before the renewed window ends, long after the first window's "+
		"time to live, rounded to whole seconds, ran out)")
	f.requireRetry(den, time.Minute, g)
}

// testActiveToLastMicrosecond checks a counter in the last millisecond of
// its window. First a window anchored on a whole millisecond, checked half
// a millisecond before its end: a store whose clock keeps milliseconds (the
// memory store truncates it) sees the last millisecond begin, one that keeps
// microseconds half a millisecond left, and either way the counter counts;
// only a store that reads its time left in whole milliseconds finds none.
// Then, when the store has shown that its clock keeps microseconds (a
// check a fraction of a millisecond later reports that much less time
// left), a window anchored between two milliseconds, checked 100 µs
// before its end, after the whole millisecond its end falls in.
func testActiveToLastMicrosecond(t *testing.T, f *fixture) {
	const g = "lifetime: a counter stays active to the last microsecond of its window (a store that keeps a key's time " +
		"to live in whole milliseconds ends it early)"
	if !f.inst.ExactTime {
		f.skip("lifetime: a store clock that keeps running ends a window's last millisecond by itself")
	}
	p := f.policy(1, window)
	f.advance((time.Millisecond - start%time.Millisecond) % time.Millisecond)
	k := f.key()
	f.allow(f.check(p, k), 0, g)
	f.advance(window - 500*time.Microsecond)
	den := f.deny(f.check(p, k), domain.QuotaExhausted, g+" (half a millisecond before the end of a window anchored on a "+
		"whole millisecond)")
	retry, ok := den.RetryAfter()
	require.True(t, ok, "%s: a quota denial must say when to retry", g)
	require.Contains(t, []time.Duration{500 * time.Microsecond, time.Millisecond}, retry,
		"%s: the time left is half a millisecond, or the whole last millisecond on a clock that keeps milliseconds", g)

	// Now 0.5 ms past a whole millisecond: a window anchored here ends
	// between two milliseconds too.
	j := f.key()
	f.allow(f.check(p, j), 0, g+" (a window anchored between two whole milliseconds)")
	const probe = 200 * time.Microsecond
	f.advance(probe)
	den = f.deny(f.check(p, j), domain.QuotaExhausted, g)
	retry, _ = den.RetryAfter()
	if retry != window-probe {
		// A clock that keeps milliseconds: this check fell in the same
		// millisecond as the one before, and the window's end is a whole
		// millisecond of its own.
		require.Equal(t, window, retry, "%s: the time left %v after the window began, on a clock that keeps "+
			"microseconds or one that keeps milliseconds", g, probe)
		return
	}
	f.advance(window - probe - 100*time.Microsecond)
	den = f.deny(f.check(p, j), domain.QuotaExhausted, g+" (100 µs before the end, after the whole millisecond the end "+
		"falls in: a store whose clock keeps microseconds keeps the counter to the microsecond)")
	f.requireRetry(den, 100*time.Microsecond, g)
}

// testBatchKeysKeepOwnWindows admits one batch of two keys under policies
// with windows of an hour and of two, in both orders, and checks each
// long window after the short ones have ended.
func testBatchKeysKeepOwnWindows(t *testing.T, f *fixture) {
	const g = "lifetime: each key of a batch lives as long as its own policy's window (a store that gives every key of " +
		"a batch the first check's time to live loses the longer window's counter)"
	short := f.policyOf("conformance.short", "subject", 1, window)
	long := f.policyOf("conformance.long", "subject", 1, 2*window)
	a, b, c, d := f.key(), f.key(), f.key(), f.key()
	rem := f.admitAllowed([]domain.Check{f.check(short, a), f.check(long, b)}, g)
	require.Equal(t, []int64{0, 0}, rem, g)
	rem = f.admitAllowed([]domain.Check{f.check(long, c), f.check(short, d)}, g)
	require.Equal(t, []int64{0, 0}, rem, g)
	f.advance(window + time.Minute)
	for _, k := range []domain.SubjectKey{b, c} {
		den := f.deny(f.check(long, k), domain.QuotaExhausted, g+" (the two-hour window, after the one-hour windows "+
			"of the same batches ended)")
		f.requireRetry(den, window-time.Minute, g)
	}
	f.allow(f.check(short, a), 0, g+" (the one-hour window ended)")
	f.allow(f.check(short, d), 0, g+" (the one-hour window ended)")
}
