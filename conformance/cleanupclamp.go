package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// cleanupClampScenario checks that the time a cleanup judged counters
// ended at is a time the store has seen: a clock that then steps back
// anchors no window before it (SPEC section 3: time never goes backwards
// for a key; section 4: a partition never sees time go backwards).
//
// A store whose cleanup reads its clamped time but does not raise the
// clamp to it removes a counter at one time and, after the clock steps
// back, anchors the key's new window at an earlier one: the window ends
// early, and the key gets more than its limit within one window's span of
// the cleanup. The clamp cases that step the clock back around a cleanup
// all have an admission raise the clamp first, so they do not see it.
func cleanupClampScenario() scenario {
	return scenario{name: "cleanupclamp", cases: []testCase{
		{name: "a_cleanup_raises_the_clamp_to_the_time_it_judged", run: testCleanupRaisesClamp},
	}}
}

func testCleanupRaisesClamp(t *testing.T, f *fixture) {
	const g = "cleanupclamp: a window anchored after a cleanup and a clock that stepped back starts no earlier than the " +
		"cleanup's time (a store whose cleanup leaves the clamp below the time it judged anchors windows in its past)"
	f.requireSteppableClock()
	cleanup, ok := f.cleaner()
	if !ok {
		f.skip("cleanupclamp: the store does not implement ports.Cleaner")
	}
	p, k := f.policy(1, window), f.key()
	c := f.check(p, k)
	f.allow(c, 0, g)
	// No admission reads the clock between the first check and the
	// cleanup: only the cleanup sees this time.
	f.advance(window + clampStep)
	n, err := cleanup(10)
	require.NoError(t, err, "%s: CleanupExpired failed", g)
	require.Equal(t, 1, n, "%s: the only counter has ended, so cleanup removes it", g)
	f.stepBack(clampStep / 2)
	f.requireDuration(window, f.allow(c, 0, g+" (the key starts a new window after the clock stepped back)").ResetAfter, g)
	f.advance(clampStep / 2)
	f.requireRetry(f.deny(c, domain.QuotaExhausted, g), window,
		g+" (the clock is back at the cleanup's time, where the new window began: its whole window is left)")
}
