package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// lastMicroScenario checks that neither cleanup nor a full partition takes
// a counter in the last microsecond of its window for an ended one (SPEC
// section 2: the window is half-open, [start, start+window), so a counter
// is active until its end; active entries are never evicted; ports.Cleaner:
// CleanupExpired never removes an active counter).
//
// A store that judges "expired" with a bound one microsecond off (Expires
// <= now+1, or a scan whose range end is inclusive of the next
// microsecond) removes or evicts a counter in its last microsecond only,
// which no check a millisecond or more before the end shows. Each window
// is anchored on a whole millisecond, so a store whose clock keeps
// milliseconds (the memory store) sees its last millisecond begin, and one
// that keeps microseconds its last microsecond: either way the counter is
// active.
func lastMicroScenario() scenario {
	return scenario{name: "lastmicro", cases: []testCase{
		{name: "cleanup_keeps_a_counter_in_its_last_microsecond", run: testCleanupKeepsLastMicrosecond},
		{name: "a_full_partition_keeps_counters_in_their_last_microsecond", single: true, opts: capacityOptions,
			run: testFullPartitionKeepsLastMicrosecond},
	}}
}

// alignToMillisecond moves the case's time to the next whole millisecond.
func (f *fixture) alignToMillisecond() {
	f.t.Helper()
	if !f.inst.ExactTime {
		f.skip("lastmicro: a store clock that keeps running ends a window's last microsecond by itself")
	}
	f.advance((time.Millisecond - start%time.Millisecond) % time.Millisecond)
}

// requireLastMoment checks a quota denial of a counter in its last
// millisecond: its retry time is positive and at most a millisecond.
func (f *fixture) requireLastMoment(c domain.Check, g string) {
	f.t.Helper()
	den := f.deny(c, domain.QuotaExhausted, g+" (the counter is in its last microsecond)")
	retry, ok := den.RetryAfter()
	require.True(f.t, ok, "%s: a quota denial must say when to retry", g)
	require.True(f.t, retry > 0 && retry <= time.Millisecond, "%s: the window ends within a millisecond, got a retry of %v", g, retry)
}

func testCleanupKeepsLastMicrosecond(t *testing.T, f *fixture) {
	const g = "lastmicro: cleanup keeps a counter in the last microsecond of its window (a store that removes counters " +
		"ending at or before the next microsecond removes an active one)"
	cleanup, ok := f.cleaner()
	if !ok {
		f.skip("lastmicro: the store does not implement ports.Cleaner")
	}
	f.alignToMillisecond()
	p := f.policy(1, window)
	ks := f.keys(3)
	for _, k := range ks {
		f.allow(f.check(p, k), 0, g)
	}
	f.advance(window - time.Microsecond)
	n, err := cleanup(10)
	require.NoError(t, err, "%s: CleanupExpired failed", g)
	require.Zero(t, n, "%s: every counter is in its last microsecond, so cleanup removes none", g)
	for _, k := range ks {
		f.requireLastMoment(f.check(p, k), g)
	}
	f.advance(time.Microsecond)
	n, err = cleanup(10)
	require.NoError(t, err, "%s: CleanupExpired failed", g)
	require.Equal(t, len(ks), n, "%s: a microsecond later every counter has ended, and cleanup removes each", g)
}

func testFullPartitionKeepsLastMicrosecond(t *testing.T, f *fixture) {
	const g = "lastmicro: a full partition keeps its counters in the last microsecond of their windows and denies a " +
		"new key (a store that makes room by evicting counters ending at or before the next microsecond evicts active ones)"
	f.alignToMillisecond()
	p := f.policy(1, window)
	part := f.somePart(p)
	ks := f.fillPartition(p, part, g)
	f.advance(window - time.Microsecond)
	f.deny(f.check(p, f.keyIn(p, part)), domain.StorageCapacity, g+" (a new key of the full partition)")
	for _, k := range ks {
		f.requireLastMoment(f.check(p, k), g)
	}
	f.requireOccupancy(occupancy{part: len(ks)}, g)
}
