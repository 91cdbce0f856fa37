package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// testCapacityRetryAcrossWindows fills a partition with counters of two
// policies whose windows differ, the one that ends first stored last and
// under a policy, and with a window, other than the refused key's: a
// capacity denial's retry time, when the store gives one, is that
// counter's end. A store that adds the refused check's window to the
// partition's earliest start, as if every counter had that window, or
// that takes the counter stored first, answers later.
func testCapacityRetryAcrossWindows(t *testing.T, f *fixture) {
	const g = "retry: a capacity denial's retry time is the earliest expiry in the partition, whatever the window of " +
		"the counter that ends first"
	const short = 10 * time.Minute
	own := f.policy(1, window)
	other := f.policyOf("conformance.other", "subject", 1, short)
	part := f.somePart(own)
	c := f.opts.Capacity
	f.admitNew(own, part, c-1, g+" (keys of the refused key's own policy, whose windows end in an hour)")
	f.advance(time.Minute)
	f.admitNew(other, part, 1, g+" (a key of another policy, stored a minute later, whose window ends ten minutes after that)")
	f.requireOccupancy(occupancy{part: c}, g)
	den := f.deny(f.check(own, f.keyIn(own, part)), domain.StorageCapacity, g)
	if retry, ok := den.RetryAfter(); ok {
		f.requireDuration(short, retry, g+" (the other policy's counter ends first: a store that adds the refused "+
			"check's window to the earliest start, or looks only at the refused key's own policy, answers later)")
	}
	f.requireOccupancy(occupancy{part: c}, g+" (the refused key holds no slot)")
}

// testCapacityRetryOfExpiredPartition denies a new key in a full
// partition, so that a retry time is known, then fills a second partition
// with counters that all expire: a new key there is admitted (a store that
// removes expired counters on the way) or refused for capacity, and a
// retry time it gives is that partition's own earliest expiry, passed
// already, so zero. A store that keeps its last retry time in a buffer and
// recomputes it only from active counters answers the first partition's.
func testCapacityRetryOfExpiredPartition(t *testing.T, f *fixture) {
	const g = "retry: the retry time of a full partition whose counters have all expired is its own earliest " +
		"expiry, already passed, never one kept from an earlier denial"
	if f.parts == 1 {
		f.skip("retry: the store has one capacity partition")
	}
	long := f.policy(1, window)
	short := f.policyOf("conformance.other", "subject", 1, time.Minute)
	active := f.somePart(long)
	expired := f.otherPart(long, active)
	c := f.opts.Capacity
	f.fillPartition(long, active, g+" (a partition of counters that stay active)")
	den := f.deny(f.check(long, f.keyIn(long, active)), domain.StorageCapacity, g+" (a denial whose retry time is an hour away)")
	if retry, ok := den.RetryAfter(); ok {
		f.requireDuration(window, retry, g+" (the earliest expiry of the first partition)")
	}
	f.admitNew(short, expired, c, g+" (a second partition of one-minute windows)")
	f.advance(2 * time.Minute)
	d := f.decide(f.check(short, f.keyIn(short, expired)), g)
	f.requireAdmittedOrZeroRetry(d, g, "a full partition of expired counters",
		"every counter of the partition ended a minute ago, so a retry time, when given, is zero; it is a time kept from another partition's denial")
}

// requireAdmittedOrZeroRetry checks the decision d on a new key in where,
// a full partition whose earliest counter has already ended: the key is
// admitted (the store removed that counter on the way) or refused for
// storage capacity, and a retry time, when the refusal gives one, is zero,
// as why explains.
func (f *fixture) requireAdmittedOrZeroRetry(d domain.Decision, g, where, why string) {
	t := f.t
	t.Helper()
	den, denied := d.Denial()
	if !denied {
		_, ok := d.Allowance()
		require.True(t, ok, "%s: a new key in %s is admitted (once the ended counters are removed) or refused "+
			"for storage capacity, got %s", g, where, describe(d))
		return
	}
	require.True(t, d.Outcome() == domain.Denied && den.Reason() == domain.StorageCapacity,
		"%s: a new key in %s, got %s", g, where, describe(d))
	if retry, ok := den.RetryAfter(); ok {
		require.Zero(t, retry, "%s: %s (got %v)", g, why, retry)
	}
}
