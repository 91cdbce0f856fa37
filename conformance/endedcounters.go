package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// testCapacityRetryCountsAnEndedCounter fills a partition with one counter
// that ends after a minute and counters that stay active for an hour, then
// refuses a new key once the first has ended but is still stored. The
// partition's earliest expiry is that ended counter's, so a retry time, when
// the store gives one, is zero: a slot is free as soon as the counter is
// removed. A store that looks for the earliest expiry among active counters
// only names the hour-long counters' end. A store that removes the ended
// counter on the way admits the key instead, which is as right.
func testCapacityRetryCountsAnEndedCounter(t *testing.T, f *fixture) {
	const g = "retry: a capacity denial's retry time, when it gives one, is the partition's earliest expiry even " +
		"when that counter has already ended, so zero, not the end of its earliest active counter"
	long := f.policy(1, window)
	short := f.policyOf("conformance.other", "subject", 1, time.Minute)
	part := f.somePart(long)
	c := f.opts.Capacity
	f.admitNew(short, part, 1, g+" (a counter of one minute)")
	f.admitNew(long, part, c-1, g+" (counters that stay active for an hour)")
	f.advance(2 * time.Minute)
	f.requireOccupancy(occupancy{part: c}, g+" (the ended counter is still stored)")
	d := f.decide(f.check(long, f.keyIn(long, part)), g)
	f.requireAdmittedOrZeroRetry(d, g, "a full partition holding an ended counter",
		"the partition's earliest counter ended a minute ago, so a retry time, when given, is zero; it is the end of an active counter")
}

// testBatchRenewalLeavesTheFreeSlot stores, in one partition, one counter
// that ends after a minute and counters active for an hour, leaving one
// slot free. Once the first has ended, a batch renewing it beside a new key
// needs only the free slot, for the new key: the ended counter renews in
// its own. Unlike expired_key_renews_in_place, no other counter of the
// partition has ended, so a store that removes a few expired counters on
// each check (as the memory store does) frees no slot on the way that
// would hide a renewal claiming the free one.
func testBatchRenewalLeavesTheFreeSlot(t *testing.T, f *fixture) {
	const g = "capacity: a batch renewing an ended counter beside a new key leaves the partition's one free slot to " +
		"the new key, even when no other counter of the partition has ended"
	short := f.policy(1, time.Minute)
	long := f.policyOf("conformance.other", "subject", 1, window)
	part := f.somePart(short)
	c := f.opts.Capacity
	ended := f.admitNew(short, part, 1, g+" (a counter of one minute)")[0]
	f.admitNew(long, part, c-2, g+" (counters active for an hour, leaving one slot free)")
	f.advance(2 * time.Minute)
	fresh := f.keyIn(long, part)
	rem := f.admitAllowed([]domain.Check{f.check(short, ended), f.check(long, fresh)},
		g+" (the ended counter renews in its own slot, the new key takes the free one)")
	require.Equal(t, []int64{0, 0}, rem, "%s: the remaining units of the renewal and the new key", g)
	f.requireOccupancy(occupancy{part: c}, g+" (the partition is full)")
	f.deny(f.check(long, f.keyIn(long, part)), domain.StorageCapacity, g+" (the partition is full)")
}
