package conformance

import (
	"testing"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// retryScenario checks a capacity denial's retry time where a store that
// tracks expiries apart from its counters goes wrong: the partition's
// earliest expiry belongs to a counter of another policy, checked again
// since it was created, and ends a fraction of a second after a whole
// second of the refusal.
//
//   - A store that takes the earliest expiry from its keys' time to live,
//     which it refreshes on every write, reports the refreshed time.
//   - A store that looks for the earliest expiry among the refused
//     check's own policy (an index on policy and expiry) misses another
//     policy's counters in the same partition.
//   - A store that reads a time to live in whole seconds (TTL) rounds the
//     retry time.
//   - A store that adds the refused check's window to the partition's
//     earliest start answers late when the counter that ends first has a
//     shorter window (capacity_retry_counts_every_window).
//   - A store that keeps its last retry time in a buffer, recomputed from
//     active counters only, answers another partition's for a partition
//     whose counters have all ended
//     (capacity_retry_of_a_partition_of_expired_counters).
//
// (capacity's full_partition_denies_a_new_key checks the retry time of a
// partition whose counters one policy created once each, whole minutes
// apart.)
func retryScenario() scenario {
	return scenario{name: "retry", cases: []testCase{
		{name: "capacity_retry_is_the_partitions_earliest_expiry", single: true, opts: capacityOptions, run: testCapacityRetryEarliestExpiry},
		{name: "capacity_retry_counts_every_window", single: true, opts: capacityOptions, run: testCapacityRetryAcrossWindows},
		{name: "capacity_retry_of_a_partition_of_expired_counters", single: true, opts: capacityOptions, run: testCapacityRetryOfExpiredPartition},
		{name: "capacity_retry_counts_an_ended_counter", single: true, opts: capacityOptions, run: testCapacityRetryCountsAnEndedCounter},
	}}
}

func testCapacityRetryEarliestExpiry(t *testing.T, f *fixture) {
	const g = "retry: a capacity denial's retry time, when it gives one, is the earliest expiry in the refused key's " +
		"partition, to the microsecond: that of another policy's counter, however often that counter was checked since " +
		"its window began"
	p := f.policy(2, window)
	other := f.policyOf("conformance.other", "subject", 2, window)
	part := f.somePart(p)
	first := f.keyIn(other, part)
	f.allow(f.check(other, first), 1, g+" (the partition's earliest window, of another policy)")
	const gap = time.Minute + 1500*time.Millisecond
	f.advance(gap)
	f.admitNew(p, part, f.opts.Capacity-1, g+" (the partition's other windows, later)")
	f.advance(time.Minute)
	f.allow(f.check(other, first), 0, g+" (the earliest window, checked again: its end stays where it was)")
	const late = 250 * time.Millisecond
	f.advance(late)
	refused := f.keyIn(p, part)
	den := f.deny(f.check(p, refused), domain.StorageCapacity, g)
	if retry, ok := den.RetryAfter(); ok {
		f.requireDuration(window-gap-time.Minute-late, retry, g)
	}
	f.requireOccupancy(occupancy{part: f.opts.Capacity}, g+" (the refused key holds no slot)")
}
