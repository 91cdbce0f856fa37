package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// extremesScenario checks time at its edges: the smallest step back a
// clock can take, and the microseconds of the largest window, which end
// past 2^53 µs on a store that counts its time from the Unix epoch.
//
//   - A clock that steps back by a microsecond is clamped as one that
//     steps back by minutes is (clamp checks those): a store that lets
//     small steps through as jitter, or compares its clamp in whole
//     milliseconds, moves a window back by less than a millisecond.
//   - A window of the largest length stays active to its last microsecond
//     and ends exactly then. Its end lies past 2^53 µs on a Unix epoch
//     (year 2255), so a store that keeps its times as float64
//     microseconds, or a key's deadline as float64 seconds (a sorted-set
//     score), rounds some ends by a microsecond or more; the case anchors
//     windows on consecutive microseconds, so some end on an odd one,
//     whatever the store's epoch.
//   - A capacity denial's retry time is the partition's earliest expiry,
//     exactly, when that expiry is the largest window's: a store that caps
//     a retry time (at a day, say) or keeps it in a float64 on a Unix
//     epoch answers another. The case runs twice, anchored a microsecond
//     apart, so that one run's expiry is odd on any epoch.
func extremesScenario() scenario {
	return scenario{name: "extremes", cases: []testCase{
		{name: "a_step_back_of_a_microsecond_is_clamped", single: true, run: testMicrosecondStepBackClamped},
		{name: "largest_window_lasts_to_its_last_microsecond", single: true, run: testLargestWindowLastMicrosecond},
		{name: "capacity_retry_of_largest_windows_is_exact", single: true, opts: capacityOptions,
			run: func(t *testing.T, f *fixture) { testCapacityRetryOfLargestWindows(t, f, 0) }},
		{name: "capacity_retry_of_largest_windows_a_microsecond_on_is_exact", single: true, opts: capacityOptions,
			run: func(t *testing.T, f *fixture) { testCapacityRetryOfLargestWindows(t, f, time.Microsecond) }},
	}}
}

// testMicrosecondStepBackClamped checks a key a fraction of a millisecond
// into its window, then steps the clock back by a microsecond (within the
// same whole millisecond) and by a millisecond more: each later check
// reports the time left the check before the first step did.
func testMicrosecondStepBackClamped(t *testing.T, f *fixture) {
	const g = "extremes: a clock that steps back by a microsecond is clamped too (a store that lets small steps " +
		"through as jitter, or compares its latest time in whole milliseconds, moves the window back)"
	f.requireSteppableClock()
	const limit = 10
	p, k := f.policy(limit, window), f.key()
	c := f.check(p, k)
	f.allow(c, limit-1, g)
	// start lies 567 µs into a millisecond: 300 µs on stays in it.
	const on = 300 * time.Microsecond
	f.advance(on)
	a := f.allow(c, limit-2, g)
	left := a.ResetAfter
	require.Contains(t, []time.Duration{window - on, window}, left, "%s: the time left %v into the window, on a clock "+
		"that keeps microseconds or one that keeps milliseconds", g, on)
	remaining := int64(limit - 3)
	for _, step := range []time.Duration{time.Microsecond, time.Millisecond} {
		f.stepBack(step)
		a = f.allow(c, remaining, g+" (the clock stepped back)")
		f.requireDuration(left, a.ResetAfter, g+" (the window's time left never grows)")
		remaining--
	}
	f.advance(time.Millisecond + time.Microsecond)
	a = f.allow(c, remaining, g+" (the clock is back where it stepped back from)")
	f.requireDuration(left, a.ResetAfter, g)
}

// extremeKeys is how many windows testLargestWindowLastMicrosecond anchors
// on consecutive microseconds.
const extremeKeys = 8

// testLargestWindowLastMicrosecond anchors windows of the largest length
// on consecutive microseconds and, once the store has shown that its clock
// keeps microseconds, checks each in its last microsecond and at its end.
func testLargestWindowLastMicrosecond(t *testing.T, f *fixture) {
	const g = "extremes: a window of the largest length stays active to its last microsecond and ends exactly then " +
		"(a store that keeps times, or a key's deadline, in a float64 on the Unix epoch rounds ends past 2^53 µs)"
	if !f.inst.ExactTime {
		f.skip("extremes: a store clock that keeps running ends a window's last microsecond by itself")
	}
	p := f.policy(1, domain.MaxWindow)
	ks := f.keys(extremeKeys)
	for i, k := range ks {
		if i > 0 {
			f.advance(time.Microsecond)
		}
		a := f.allow(f.check(p, k), 0, g)
		f.requireDuration(domain.MaxWindow, a.ResetAfter, g)
	}
	// The first window began extremeKeys-1 µs ago, all within the
	// millisecond start lies in.
	const probe = 200 * time.Microsecond
	f.advance(probe)
	since := probe + (extremeKeys-1)*time.Microsecond
	den := f.deny(f.check(p, ks[0]), domain.QuotaExhausted, g)
	retry, _ := den.RetryAfter()
	if retry != domain.MaxWindow-since {
		// A clock that keeps milliseconds anchored every window at the
		// whole millisecond before start; windows's largest_limit_and_window
		// checks its end.
		require.Equal(t, domain.MaxWindow, retry, "%s: the time left %v after the first window began, on a clock that "+
			"keeps microseconds or one that keeps milliseconds", g, since)
		return
	}
	f.advance(domain.MaxWindow - since - time.Microsecond)
	// Each window's end is the next one's last microsecond.
	for _, k := range ks {
		c := f.check(p, k)
		den := f.deny(c, domain.QuotaExhausted, g+" (the window's last microsecond)")
		f.requireRetry(den, time.Microsecond, g+" (the window's last microsecond)")
		f.advance(time.Microsecond)
		a := f.allow(c, 0, g+" (the window ends, to the microsecond, and renews)")
		f.requireDuration(domain.MaxWindow, a.ResetAfter, g+" (the renewed window)")
	}
}

// testCapacityRetryOfLargestWindows fills a partition with windows of the
// largest length, anchored offset after start, and checks a new key's
// capacity retry time a whole millisecond later: on a clock that keeps
// milliseconds and one that keeps microseconds alike, the partition's
// earliest window has a whole millisecond less than the largest left.
func testCapacityRetryOfLargestWindows(t *testing.T, f *fixture, offset time.Duration) {
	const g = "extremes: a capacity denial's retry time, when it gives one, is the partition's earliest expiry, " +
		"exactly, when that is a window of the largest length (a store that caps a retry time, or keeps it in a float64 " +
		"on the Unix epoch, answers another)"
	p := f.policy(1, domain.MaxWindow)
	part := f.somePart(p)
	if offset > 0 {
		f.advance(offset)
	}
	f.admitNew(p, part, f.opts.Capacity, g+" (the partition's windows, all of the largest length)")
	const later = time.Millisecond
	f.advance(later)
	den := f.deny(f.check(p, f.keyIn(p, part)), domain.StorageCapacity, g)
	if retry, ok := den.RetryAfter(); ok {
		f.requireDuration(domain.MaxWindow-later, retry, g)
	}
}
