package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// timeScenario checks that the store's clock never moves a window
// backwards: a window anchored later never ends earlier, and a window's
// time left never grows.
func timeScenario() scenario {
	return scenario{name: "time", cases: []testCase{
		{name: "later_windows_never_end_earlier", single: true, run: testLaterWindowsNeverEndEarlier},
		{name: "time_left_never_grows", single: true, run: testTimeLeftNeverGrows},
		{name: "running_clock_moves_by_the_real_time_between_checks", single: true, run: testRunningClockPrecision},
		{name: "times_a_few_microseconds_past_a_whole_second_are_read_as_they_are", single: true, run: testSubSecondPastWholeSecond},
	}}
}

func testLaterWindowsNeverEndEarlier(t *testing.T, f *fixture) {
	const g = "time: the store's clock never runs backwards, so a window anchored later never ends earlier"
	const step = time.Millisecond
	p := f.policy(5, window)
	ks := f.keys(min(f.opts.MaxBatchSize, 6))
	checks := make([]domain.Check, len(ks))
	for i, k := range ks {
		checks[i] = f.check(p, k)
		f.allow(checks[i], 4, g)
		f.advance(step)
	}
	// One batch reads every window at one clock sample, so the comparison
	// holds on a clock that keeps running too.
	bd := f.admit(checks, g)
	require.Equal(t, domain.Allowed, bd.Outcome(), "%s: got %s", g, describeBatch(bd))
	var prev time.Duration
	for i, d := range bd.Decisions() {
		a, _ := d.Allowance()
		require.LessOrEqual(t, a.ResetAfter, window, "%s: window %d has more than a window left", g, i)
		if i == 0 {
			prev = a.ResetAfter
			continue
		}
		if f.inst.ExactTime {
			require.Equal(t, prev+step, a.ResetAfter, "%s: window %d was anchored %v after window %d", g, i, step, i-1)
		} else {
			require.GreaterOrEqual(t, a.ResetAfter, prev+step, "%s: window %d was anchored at least %v after window %d", g, i, step, i-1)
		}
		prev = a.ResetAfter
	}
}

func testTimeLeftNeverGrows(t *testing.T, f *fixture) {
	const g = "time: a window's time left never grows from one check to the next"
	const step = time.Millisecond
	p, k := f.policy(10, window), f.key()
	prev := f.allow(f.check(p, k), 9, g).ResetAfter
	for i := range 6 {
		f.advance(step)
		a := f.allow(f.check(p, k), int64(8-i), g)
		f.requireDuration(prev-step, a.ResetAfter, g)
		prev = a.ResetAfter
	}
}

// testRunningClockPrecision makes at least runningChecks checks of one key,
// one after another, and goes on until they have spanned runningFor of
// real time, up to maxRunningChecks. A clock cut to milliseconds is seen
// only between two checks that straddle a millisecond's end; checks of a
// fast local store take microseconds each, so 64 of them can all fall
// inside one millisecond, and a span of ten milliseconds makes sure
// that several ends fall between them.
const (
	runningChecks    = 64
	runningFor       = 10 * time.Millisecond
	maxRunningChecks = 1 << 12
)

// testRunningClockPrecision checks, on a clock that keeps running (a
// server's), that a window's time left falls from one check to the next
// by no more than the real time from the start of the first to the end of
// the second. Elsewhere such a store's durations may fall short by the
// real time a whole case took, which hides a clock cut to whole
// milliseconds whenever the case took longer than one; here a store that
// reads its server's time in milliseconds (or keeps it so) drops a whole
// millisecond at once between two checks that took less, as most
// consecutive checks of a local server do.
func testRunningClockPrecision(t *testing.T, f *fixture) {
	const g = "time: on a clock that keeps running, a window's time left falls between two checks by at most the " +
		"real time between them (a clock read or kept in whole milliseconds drops a millisecond at once)"
	if f.inst.ExactTime {
		f.skip("time: the store's clock moves only through Advance, and the windows cases check its microseconds exactly")
	}
	p, k := f.policy(maxRunningChecks, window), f.key()
	c := f.check(p, k)
	var (
		prev      time.Duration
		prevStart time.Time
	)
	first := time.Now()
	for i := 0; i < maxRunningChecks && (i < runningChecks || time.Since(first) < runningFor); i++ {
		began := time.Now()
		a := f.allow(c, int64(maxRunningChecks-1-i), g)
		if i > 0 {
			// The store's clock and this process's may be different clocks
			// (a server's wall clock, Go's monotonic one): a microsecond of
			// rounding and a slew of a thousandth cover that.
			span := time.Since(prevStart)
			require.LessOrEqual(t, prev-a.ResetAfter, span+span/1000+time.Microsecond,
				"%s: check %d had %v left and check %d %v, though the two took %v from the first's start to the second's end",
				g, i, prev, i+1, a.ResetAfter, span)
		}
		prev, prevStart = a.ResetAfter, began
	}
}
