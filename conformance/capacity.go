package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// capacityScenario checks the hard bound on stored counters in each
// capacity partition, counted exactly: a full partition refuses new keys,
// never evicts an active one, keeps serving the keys it holds, and renews an
// expired key in its own slot; expired counters hold their slots until they
// are removed; the new keys of one batch compete for the free slots; a
// denied batch keeps none; and each partition's bound is its own.
//
// Every key is aimed at a partition (see partition.go), so the counts are
// exact on a store with any number of partitions.
func capacityScenario() scenario {
	return scenario{name: "capacity", cases: []testCase{
		{name: "full_partition_denies_a_new_key", single: true, opts: capacityOptions, run: testFullPartitionDenies},
		{name: "never_evicts_an_active_key", single: true, opts: capacityOptions, run: testNeverEvicts},
		{name: "each_partition_holds_its_own_bound", single: true, opts: capacityOptions, run: testEachPartitionHoldsItsBound},
		{name: "full_partition_serves_existing_keys", single: true, opts: capacityOptions, run: testFullPartitionServesExisting},
		{name: "expired_key_renews_in_place", single: true, opts: capacityOptions, run: testExpiredKeyRenewsInPlace},
		{name: "batch_renewal_leaves_the_free_slot_to_its_new_key", single: true, opts: capacityOptions, run: testBatchRenewalLeavesTheFreeSlot},
		{name: "expired_counters_hold_their_slots_until_removed", single: true, opts: capacityOptions, run: testExpiredCountersHoldSlots},
		{name: "new_key_fits_after_cleanup", single: true, opts: capacityOptions, run: testNewKeyFitsAfterCleanup},
		{name: "renewals_leave_the_freed_slots_usable", single: true, opts: capacityOptions, run: testRenewalsLeaveFreedSlotsUsable},
		{name: "new_keys_of_a_batch_compete_for_free_slots", single: true, opts: capacityOptions, run: testBatchNewKeysCompete},
		{name: "new_keys_of_a_batch_take_slots_of_their_own_partitions", single: true, opts: capacityOptions, run: testBatchNewKeysOwnPartitions},
		{name: "denied_batch_keeps_no_slot", single: true, opts: capacityOptions, run: testDeniedBatchKeepsNoSlot},
		{name: "odd_capacity_is_exact", single: true, opts: oddCapacityOptions, run: testFullPartitionDenies},
	}}
}

// oddCapacityOptions make a partition's bound a number no store rounds to:
// every other case's capacity is a power of two, which a store that sizes
// its table to the next power of two and counts slots by it would meet
// exactly.
var oddCapacityOptions = Options{Capacity: 3, MaxBatchSize: 8}

func testFullPartitionDenies(t *testing.T, f *fixture) {
	const g = "capacity: a partition holding Capacity counters denies a new key for storage capacity"
	p := f.policy(2, window)
	part := f.somePart(p)
	c := f.opts.Capacity
	want := occupancy{part: c}
	if other := f.otherPart(p, part); other >= 0 {
		// A counter of another partition that ends before any of this
		// one's: it is no reason to retry here.
		f.allow(f.check(p, f.keyIn(p, other)), 1, g+" (a key in another partition)")
		f.advance(time.Minute)
		want[other] = 1
	}
	// One key a minute, so that the partition's counters end at different
	// times and the earliest end is the first key's.
	held := f.keysIn(p, part, c)
	for i, k := range held {
		if i > 0 {
			f.advance(time.Minute)
		}
		f.allow(f.check(p, k), 1, g+" (a partition with room admits a new key)")
	}
	f.requireOccupancy(want, g)
	refused := f.keyIn(p, part)
	f.deny(f.check(p, refused), domain.StorageCapacity, g)
	f.advance(10 * time.Minute)
	den := f.deny(f.check(p, refused), domain.StorageCapacity, g+" (asked again)")
	first := window - time.Duration(c-1)*time.Minute - 10*time.Minute
	if retry, ok := den.RetryAfter(); ok {
		f.requireDuration(first, retry, g+" (a capacity denial's retry time is the earliest expiry in the partition: the first key's)")
	}
	// Beside the first key in a batch, which the denied batch leaves as it
	// was, the earliest expiry is still the first key's: a store that looks
	// for it among the counters the batch does not name answers the second
	// key's, a minute late.
	den = f.admitDenied([]domain.Check{f.check(p, held[0]), f.check(p, refused)}, 1, domain.StorageCapacity,
		g+" (a batch of the first key and the new one)")
	if retry, ok := den.RetryAfter(); ok {
		f.requireDuration(first, retry, g+" (in a batch beside the first key, the retry time is still that key's end: "+
			"the batch's own counters are in the partition too)")
	}
	f.requireOccupancy(want, g+" (the refused key holds no slot)")

	// The first key renews in its own slot at its window's end, so the
	// partition's earliest end is now the second key's, a minute later.
	f.advance(first)
	a := f.allow(f.check(p, held[0]), 1, g+" (the first key renews its expired window in place)")
	f.requireDuration(window, a.ResetAfter, g+" (the renewed window starts at the renewing check)")
	den = f.deny(f.check(p, refused), domain.StorageCapacity, g+" (the partition is full of active counters again)")
	if retry, ok := den.RetryAfter(); ok {
		f.requireDuration(time.Minute, retry, g+" (after the first key renewed, the earliest expiry in the partition is the "+
			"second key's: a retry time kept from before the renewal, or taken from another partition, is too early)")
	}
	f.requireOccupancy(want, g+" (the renewal took no new slot)")
}

func testNeverEvicts(t *testing.T, f *fixture) {
	const g = "capacity: an active key is never evicted to make room for a new one"
	p := f.policy(1, window)
	part := f.somePart(p)
	held := f.fillPartition(p, part, g)
	// Press on: a store that evicts does it when new keys keep coming.
	for range 3 {
		f.deny(f.check(p, f.keyIn(p, part)), domain.StorageCapacity, g+" (a new key in the full partition)")
		f.advance(time.Minute)
	}
	for i, k := range held {
		d := f.decide(f.check(p, k), g)
		den, _ := d.Denial()
		require.True(t, d.Outcome() == domain.Denied && den.Reason() == domain.QuotaExhausted,
			"%s: held key %d of %d must still be exhausted, got %s (its counter was evicted)", g, i+1, len(held), describe(d))
	}
}

func testEachPartitionHoldsItsBound(t *testing.T, f *fixture) {
	const g = "capacity: each partition's bound is its own: a full one refuses only its new keys, the others keep admitting"
	if f.parts == 1 {
		f.skip("capacity: the store has one capacity partition")
	}
	p := f.policy(1, window)
	c := f.opts.Capacity
	full := f.somePart(p)
	f.fillPartition(p, full, g)
	open := f.otherPart(p, full)
	// A minute later, so that the partitions' earliest expiries differ.
	f.advance(time.Minute)
	f.admitNew(p, open, c-1, g+" (another partition has room)")
	f.requireOccupancy(occupancy{full: c, open: c - 1}, g)

	f.deny(f.check(p, f.keyIn(p, full)), domain.StorageCapacity, g+" (the full partition)")
	den := f.admitDenied([]domain.Check{f.check(p, f.keyIn(p, open)), f.check(p, f.keyIn(p, full))}, 1, domain.StorageCapacity,
		g+" (a batch with a new key in each: the full partition's refuses the batch)")
	if retry, ok := den.RetryAfter(); ok {
		f.requireDuration(window-time.Minute, retry, g+" (the refused key's retry time is the earliest expiry of its own "+
			"partition, not of the partition of the batch's first key)")
	}
	f.admitDenied([]domain.Check{f.check(p, f.keyIn(p, full)), f.check(p, f.keyIn(p, open))}, 0, domain.StorageCapacity,
		g+" (the same in the other order)")
	f.requireOccupancy(occupancy{full: c, open: c - 1}, g+" (the denied batches stored nothing)")

	last := f.keyIn(p, open)
	f.allow(f.check(p, last), 0, g+" (the open partition's last slot)")
	f.deny(f.check(p, f.keyIn(p, open)), domain.StorageCapacity, g+" (now that partition is full too)")
	want := occupancy{full: c, open: c}
	if f.parts > 2 {
		third := f.otherPart(p, full, open)
		rem := f.admitAllowed([]domain.Check{f.check(p, f.keyIn(p, third)), f.check(p, f.keyIn(p, third))}, g+" (a third partition is still empty)")
		require.Equal(t, []int64{0, 0}, rem, g)
		want[third] = 2
	}
	f.requireOccupancy(want, g)
}

func testFullPartitionServesExisting(t *testing.T, f *fixture) {
	const g = "capacity: a full partition keeps serving the keys it holds"
	p := f.policy(3, window)
	part := f.somePart(p)
	held := f.fillPartition(p, part, g)
	for _, k := range held {
		f.allow(f.check(p, k), 1, g)
	}
	rem := f.admitAllowed([]domain.Check{f.check(p, held[0]), f.check(p, held[1])}, g+" (a batch of held keys needs no slot)")
	require.Equal(t, []int64{0, 0}, rem, g)
	f.deny(f.check(p, held[0]), domain.QuotaExhausted, g)
	f.requireOccupancy(occupancy{part: f.opts.Capacity}, g)
}

func testExpiredKeyRenewsInPlace(t *testing.T, f *fixture) {
	const g = "capacity: an expired key renews in its own slot, needing no new one"
	p := f.policy(2, window)
	part := f.somePart(p)
	c := f.opts.Capacity
	held := f.admitNew(p, part, c-1, g)
	f.advance(window)
	// The partition holds expired counters, which a store may keep until
	// cleanup, and one free slot: renewing them one at a time or as a batch
	// never needs a slot, so a batch renewing some and adding a new key
	// needs only the free one.
	a := f.allow(f.check(p, held[0]), 1, g)
	f.requireDuration(window, a.ResetAfter, g+" (a renewed window starts at the renewing check)")
	fresh := f.keyIn(p, part)
	var batch []domain.Check
	for _, k := range held[1:] {
		batch = append(batch, f.check(p, k))
	}
	batch = append(batch, f.check(p, fresh))
	rem := f.admitAllowed(batch, g+" (a batch renewing expired keys takes only the one free slot, for its new key)")
	for i, r := range rem {
		require.Equal(t, int64(1), r, "%s: check %d of the batch", g, i)
	}
	f.requireOccupancy(occupancy{part: c}, g+" (renewal took no new slot)")

	// Now the partition is full, and soon full of expired counters.
	f.advance(window)
	batch = batch[:0]
	for _, k := range append(held, fresh) {
		batch = append(batch, f.check(p, k))
	}
	rem = f.admitAllowed(batch, g+" (a batch renewing every counter of a full partition)")
	for i, r := range rem {
		require.Equal(t, int64(1), r, "%s: renewed check %d of the batch", g, i)
	}
	f.requireOccupancy(occupancy{part: c}, g+" (renewal took no new slot)")
	f.deny(f.check(p, f.keyIn(p, part)), domain.StorageCapacity, g+" (the renewed keys fill the partition)")
}

// testExpiredCountersHoldSlots checks the bound on stored counters where a
// store may choose: an expired counter holds its slot until it is removed,
// whether a check removes it on the way (the memory store removes a few
// from the checked partition on each check) or only cleanup does
// (PostgreSQL). Either way the partition never holds more than Capacity
// counters, a new key is refused only when every slot is held, and after
// renewing every key, exactly Capacity are active.
func testExpiredCountersHoldSlots(t *testing.T, f *fixture) {
	const g = "capacity: expired counters hold their slots until removed, and the bound counts them"
	p := f.policy(1, window)
	part := f.somePart(p)
	c := f.opts.Capacity
	held := f.fillPartition(p, part, g)
	f.advance(window)
	f.requireOccupancy(occupancy{part: c}, g+" (the expired counters are still stored)")

	newcomer := f.keyIn(p, part)
	d := f.decide(f.check(p, newcomer), g)
	admitted := d.Outcome() == domain.Allowed
	if !admitted {
		den, _ := d.Denial()
		require.True(t, d.Outcome() == domain.Denied && den.Reason() == domain.StorageCapacity,
			"%s: a new key is either admitted (a slot was freed) or refused for storage capacity, got %s", g, describe(d))
		f.requireOccupancy(occupancy{part: c}, g+" (a new key is refused only when every slot is held)")
	}
	active := 0
	if admitted {
		active++
	}
	for _, k := range held {
		d := f.decide(f.check(p, k), g)
		if d.Outcome() == domain.Allowed {
			active++
			continue
		}
		den, _ := d.Denial()
		require.True(t, d.Outcome() == domain.Denied && den.Reason() == domain.StorageCapacity,
			"%s: renewing an expired key is allowed, or refused for storage capacity when its counter was removed and the partition filled; got %s",
			g, describe(d))
	}
	require.Equal(t, c, active,
		"%s: after the new key and a renewal of each of the %d expired ones, exactly Capacity (%d) counters are active: "+
			"more means a slot counted twice or an expired counter was not counted, fewer means a slot was lost", g, c, c)
	f.deny(f.check(p, f.keyIn(p, part)), domain.StorageCapacity, g+" (the partition is full of active counters)")
	f.requireOccupancy(occupancy{part: c}, g+" (the partition holds exactly Capacity counters)")
}

func testNewKeyFitsAfterCleanup(t *testing.T, f *fixture) {
	const g = "capacity: cleanup frees the slots of a full partition's expired counters for new keys"
	cleanup, ok := f.cleaner()
	if !ok {
		f.skip("capacity: the store does not implement ports.Cleaner")
	}
	p := f.policy(1, window)
	part := f.somePart(p)
	c := f.opts.Capacity
	held := f.fillPartition(p, part, g)
	f.advance(window)
	removed := 0
	for range c + 1 {
		n, err := cleanup(c)
		require.NoError(t, err, "%s: CleanupExpired failed", g)
		if n == 0 {
			break
		}
		removed += n
	}
	require.Equal(t, c, removed, "%s: cleanup removes each of the %d expired counters once", g, c)
	f.requireOccupancy(occupancy{}, g+" (nothing is stored after cleanup)")
	fresh := f.keysIn(p, part, c)
	for _, k := range fresh {
		a := f.allow(f.check(p, k), 0, g+" (a new key takes a freed slot)")
		f.requireDuration(window, a.ResetAfter, g)
	}
	f.deny(f.check(p, held[0]), domain.StorageCapacity, g+" (a removed key is new again, and the partition is full again)")
	f.requireOccupancy(occupancy{part: c}, g)
}

// testRenewalsLeaveFreedSlotsUsable checks that renewing an expired key in
// place takes no slot in the store's own accounting, not only in Stats:
// after half of a full partition's expired keys are renewed and the rest
// removed, new keys get exactly the freed slots. A store that counts
// occupancy apart from the counters it stores (a slot counter, a ledger
// row) and adds to it on renewal leaks a slot per renewal, which only a
// new key wanting that slot shows.
func testRenewalsLeaveFreedSlotsUsable(t *testing.T, f *fixture) {
	const g = "capacity: renewing an expired key in place takes no slot, so new keys get exactly the slots freed beside it"
	p := f.policy(1, window)
	part := f.somePart(p)
	c := f.opts.Capacity
	held := f.fillPartition(p, part, g)
	f.advance(window)
	// Renew half of them, one alone on the case's path and the rest as a
	// batch through Admit.
	r := c / 2
	f.allow(f.check(p, held[0]), 0, g+" (renewing an expired key)")
	var batch []domain.Check
	for _, k := range held[1:r] {
		batch = append(batch, f.check(p, k))
	}
	if len(batch) > 0 {
		rem := f.admitAllowed(batch, g+" (a batch renewing expired keys)")
		for i, n := range rem {
			require.Zero(t, n, "%s: renewed check %d of the batch", g, i)
		}
	}
	free := c - r

	cleanup, ok := f.cleaner()
	if !ok {
		// The store frees slots on its own, if at all (as the memory store
		// does on each check): new keys must get every slot it freed, and
		// be refused only when the partition is full. Without Stats, only
		// the bound can be checked.
		admitted := 0
		for range c {
			d := f.decide(f.check(p, f.keyIn(p, part)), g)
			if d.Outcome() == domain.Allowed {
				admitted++
				continue
			}
			den, _ := d.Denial()
			require.True(t, d.Outcome() == domain.Denied && den.Reason() == domain.StorageCapacity,
				"%s: a new key is admitted or refused for storage capacity, got %s", g, describe(d))
			break
		}
		require.LessOrEqual(t, admitted, free,
			"%s: %d renewed counters are active, so at most %d new keys fit, but %d were admitted", g, r, free, admitted)
		f.requireOccupancy(occupancy{part: c}, g+" (a new key is refused only when every slot is held)")
		return
	}
	removed := f.cleanAll(cleanup, c, g)
	require.LessOrEqual(t, removed, free, "%s: cleanup removed %d counters, but only %d had expired (the %d renewed ones are active)",
		g, removed, free, r)
	f.requireOccupancy(occupancy{part: r}, g+" (only the renewed counters are left)")
	for i := range free {
		f.allow(f.check(p, f.keyIn(p, part)), 0,
			g+fmt.Sprintf(" (new key %d of %d takes a slot freed by cleanup; a refusal means a renewal kept a slot of its own)", i+1, free))
	}
	f.deny(f.check(p, f.keyIn(p, part)), domain.StorageCapacity, g+" (exactly the freed slots, and no more)")
	f.requireOccupancy(occupancy{part: c}, g)
	for _, k := range held[:r] {
		f.deny(f.check(p, k), domain.QuotaExhausted, g+" (the renewed counters are still there)")
	}
}

func testBatchNewKeysCompete(t *testing.T, f *fixture) {
	const g = "capacity: the new keys of one batch each need a free slot of their partition"
	p := f.policy(2, window)
	part := f.somePart(p)
	c := f.opts.Capacity
	f.admitNew(p, part, c-2, g)
	n := f.keysIn(p, part, 3)
	f.admitDenied([]domain.Check{f.check(p, n[0]), f.check(p, n[1]), f.check(p, n[2])}, 2, domain.StorageCapacity,
		g+" (three new keys for two free slots: the third is refused)")
	f.requireOccupancy(occupancy{part: c - 2}, g+" (the denied batch stored nothing)")
	rem := f.admitAllowed([]domain.Check{f.check(p, n[2]), f.check(p, n[0])}, g+" (two new keys for two free slots)")
	require.Equal(t, []int64{1, 1}, rem, g)
	f.deny(f.check(p, n[1]), domain.StorageCapacity, g+" (and then the partition is full)")
	f.requireOccupancy(occupancy{part: c}, g)

	if f.parts == 1 {
		return
	}
	// Free slots are counted per partition: two new keys in another
	// partition with one free slot are one too many, whatever room is left
	// elsewhere.
	other := f.otherPart(p, part)
	f.admitNew(p, other, c-1, g)
	batch := []domain.Check{f.check(p, f.keyIn(p, other)), f.check(p, f.keyIn(p, other))}
	want := occupancy{part: c, other: c - 1}
	if third := f.otherPart(p, part, other); third >= 0 {
		batch = append([]domain.Check{f.check(p, f.keyIn(p, third))}, batch...)
	}
	f.admitDenied(batch, len(batch)-1, domain.StorageCapacity, g+" (two new keys for the one free slot of their partition)")
	f.requireOccupancy(want, g+" (the denied batch stored nothing)")
}

func testBatchNewKeysOwnPartitions(t *testing.T, f *fixture) {
	const g = "capacity: each new key of a batch takes a slot of its own partition, none of another's"
	if f.parts == 1 {
		f.skip("capacity: the store has one capacity partition")
	}
	p := f.policy(1, window)
	c := f.opts.Capacity
	a := f.somePart(p)
	b := f.otherPart(p, a)
	f.admitNew(p, a, c-2, g)
	f.admitNew(p, b, c-2, g)
	// Each partition has two free slots, and each batch below puts one new
	// key in each: a store that counts a batch's claims in one tally for
	// every partition (count[p] + pending >= capacity) refuses the second
	// batch's second key, though its partition has a slot left.
	for i, order := range [][2]int{{a, b}, {b, a}} {
		rem := f.admitAllowed([]domain.Check{f.check(p, f.keyIn(p, order[0])), f.check(p, f.keyIn(p, order[1]))},
			fmt.Sprintf("%s (a new key in each of two partitions, each with %s)", g, []string{"two free slots", "one free slot"}[i]))
		require.Equal(t, []int64{0, 0}, rem, g)
	}
	f.requireOccupancy(occupancy{a: c, b: c}, g)
	f.deny(f.check(p, f.keyIn(p, a)), domain.StorageCapacity, g+" (and then both partitions are full)")
	f.deny(f.check(p, f.keyIn(p, b)), domain.StorageCapacity, g+" (and then both partitions are full)")
}

func testDeniedBatchKeepsNoSlot(t *testing.T, f *fixture) {
	const g = "capacity: a denied batch keeps no slot for its new keys"
	p := f.policy(1, window)
	part := f.somePart(p)
	c := f.opts.Capacity
	held := f.admitNew(p, part, c-1, g)
	exhausted := held[0]
	a, b := f.keyIn(p, part), f.keyIn(p, part)
	if f.check(p, a).CounterKey().Compare(f.check(p, b).CounterKey()) < 0 {
		// Caller order against key order: the one free slot goes to the
		// first new key in caller order, not to the first a store locks.
		a, b = b, a
	}

	f.admitDenied([]domain.Check{f.check(p, a), f.check(p, exhausted)}, 1, domain.QuotaExhausted,
		g+" (a new key before an exhausted one)")
	f.admitDenied([]domain.Check{f.check(p, a), f.check(p, b)}, 1, domain.StorageCapacity,
		g+" (two new keys for the one free slot)")
	sp := f.shadow(p)
	bd := f.admit([]domain.Check{f.check(sp, a), f.check(sp, exhausted)}, g+" (a shadow batch)")
	require.Equal(t, domain.ShadowDenied, bd.Outcome(), "%s: a shadow batch over its limit is shadow-denied, got %s", g, describeBatch(bd))
	f.requireOccupancy(occupancy{part: c - 1}, g+" (the denied batches stored nothing)")

	f.allow(f.check(p, b), 0, g+" (the free slot is still free)")
	f.deny(f.check(p, a), domain.StorageCapacity, g+" (and now it is taken)")
	f.requireOccupancy(occupancy{part: c}, g)
}
