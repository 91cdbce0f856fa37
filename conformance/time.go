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
