package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/ports"
)

// cleanupScenario checks [ports.Cleaner] on stores that offer it: cleanup
// removes expired counters, at most as many as asked each call, and never an
// active one.
func cleanupScenario() scenario {
	return scenario{name: "cleanup", cases: []testCase{
		{name: "removes_only_expired_counters", run: testCleanupRemovesOnlyExpired},
	}}
}

func testCleanupRemovesOnlyExpired(t *testing.T, f *fixture) {
	const g = "cleanup: CleanupExpired removes expired counters, at most max per call, and never an active one"
	c, ok := f.inst.Store.(ports.Cleaner)
	if !ok {
		t.Skip("cleanup: the store does not implement ports.Cleaner")
	}
	const short, long = 5, 3
	shortP, longP := f.policy(2, time.Minute), f.policy(2, window)
	shortKeys, longKeys := f.keys(short), f.keys(long)
	for i := range max(short, long) {
		if i < short {
			f.allow(f.check(shortP, shortKeys[i]), 1, g)
		}
		if i < long {
			f.allow(f.check(longP, longKeys[i]), 1, g)
		}
	}

	n, err := c.CleanupExpired(f.ctx, short)
	require.NoError(t, err, "%s: CleanupExpired failed", g)
	require.Zero(t, n, "%s: nothing has expired yet", g)

	f.advance(time.Minute)
	removed := 0
	for range short + 1 {
		n, err := c.CleanupExpired(f.ctx, 2)
		require.NoError(t, err, "%s: CleanupExpired failed", g)
		require.LessOrEqual(t, n, 2, "%s: one call removed more than max", g)
		if n == 0 {
			break
		}
		removed += n
	}
	require.Equal(t, short, removed, "%s: repeated calls remove every expired counter, and only those", g)
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
