package brokenstores

import "github.com/runlimit/runlimit/domain"

// cleanupPerCheck returns how many expired counters a check removes from
// its partition when the store cleans per check: the configured number,
// at least one; the memory store's default of eight for
// BatchRenewalClaimsSlotPerCheck, enough to empty a partition of the
// suite's expired counters before a batch reads it; and two for
// StatsEntriesActiveAtLastAdmission, so that a check leaves some behind.
func (s *Store) cleanupPerCheck() int {
	switch s.cfg.Fault {
	case BatchRenewalClaimsSlotPerCheck:
		return 8
	case StatsEntriesActiveAtLastAdmission:
		return 2
	}
	return max(s.cfg.CleanupPerCheck, 1)
}

// renewalClaimsSlot reports whether a batch of n checks claims a free slot
// for each expired key it renews (BatchRenewalClaimsSlot, and
// BatchRenewalClaimsSlotPerCheck on a store that also cleans per check).
func (s *Store) renewalClaimsSlot(n int) bool {
	return n > 1 && (s.cfg.Fault == BatchRenewalClaimsSlot || s.cfg.Fault == BatchRenewalClaimsSlotPerCheck)
}

// retryActiveOnly returns CapacityRetryActiveOnly's retry time for
// partition p at now: the earliest expiry among its active counters only.
// The caller holds s.mu.
func (s *Store) retryActiveOnly(p int, now domain.Instant) (at domain.Instant, has bool) {
	for k, e := range s.entries {
		// The defect: an ended counter still holding its slot is skipped,
		// as if it were already gone, so the retry time is the end of
		// the earliest active counter instead of now.
		if s.PartitionOf(k) == p && e.Active(now) && (!has || e.Expires < at) {
			at, has = e.Expires, true
		}
	}
	return at, has
}

// activeAtLastAdmission returns StatsEntriesActiveAtLastAdmission's
// Stats.Entries. The caller holds s.mu.
func (s *Store) activeAtLastAdmission() int64 {
	last := domain.Instant(s.last.Load())
	n := int64(0)
	for _, e := range s.entries {
		// The defect: an expired counter not yet removed is left out,
		// though it still holds its slot in the headroom.
		if e.Active(last) {
			n++
		}
	}
	return n
}
