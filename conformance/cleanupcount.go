package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testCleanupRemovesUpToItsMax checks that one call of CleanupExpired
// removes as many expired counters as it is allowed, not merely some: a
// maintenance loop drains a store by calling it until a call removes less
// than it asked for, so a cleanup that skips expired counters it passes
// (one that steps over the entry after each it deletes, as a loop over a
// list it deletes from does, or whose scan page ends early) leaves a
// backlog holding slots until the next tick, or for good.
func testCleanupRemovesUpToItsMax(t *testing.T, f *fixture) {
	const g = "cleanup: one CleanupExpired call removes every expired counter it may, up to its maximum"
	cleanup := f.requireCleaner()
	shortP, longP := f.policy(2, time.Minute), f.policy(2, window)
	part := f.somePart(shortP)
	short := f.keysIn(shortP, part, 5)
	long := f.keysIn(longP, f.somePart(longP), 2)
	for _, k := range short {
		f.allow(f.check(shortP, k), 1, g)
	}
	for _, k := range long {
		f.allow(f.check(longP, k), 1, g)
	}
	f.advance(time.Minute)
	n, err := cleanup(3)
	require.NoError(t, err, "%s: CleanupExpired failed", g)
	require.Equal(t, 3, n, "%s: five counters have expired, so CleanupExpired(3) removes three", g)
	n, err = cleanup(10)
	require.NoError(t, err, "%s: CleanupExpired failed", g)
	require.Equal(t, 2, n, "%s: two expired counters are left, so CleanupExpired(10) removes both", g)
	f.requireOccupancy(occupancy{f.partOf(longP, long[0]): 1}.add(f.partOf(longP, long[1]), 1), g+" (only the active counters are left)")
	for _, k := range long {
		f.allow(f.check(longP, k), 0, g+" (an active counter kept its count)")
	}
}

// add returns o with n more counters in partition part.
func (o occupancy) add(part, n int) occupancy {
	o[part] += n
	return o
}
