package brokenstores

import (
	"slices"

	"github.com/runlimit/runlimit/domain"
)

// This file holds the faults of an adapter author who wrote the store
// without reading the suite: each is one slip in an otherwise correct
// store (see fault.go).

// inverseTargets returns, for WritesThroughInversePermutation, the key
// each check's new counter is written to: the batch's keys sorted, mapped
// back through the inverse of the sort permutation instead of the
// permutation itself. sorted[j] is the caller index of the j-th key in
// key order, so check i's key is keys[i]; the defect writes it to
// keys[sorted[sorted[i]]], which is keys[i] whenever sorted is its own
// inverse (any batch of two keys, any batch in key order).
func inverseTargets(keys []domain.CounterKey) []domain.CounterKey {
	sorted := make([]int, len(keys))
	for i := range sorted {
		sorted[i] = i
	}
	slices.SortFunc(sorted, func(a, b int) int { return keys[a].Compare(keys[b]) })
	targets := make([]domain.CounterKey, len(keys))
	for i := range keys {
		targets[i] = keys[sorted[sorted[i]]]
	}
	return targets
}

// lastMicroExpired is the expiry test of CleanupTakesLastMicrosecond (in
// CleanupExpired) and PerCheckTakesLastMicrosecond (in a check's own
// cleanup, perCheck): a counter ending at or before the next microsecond
// counts as ended. The other path judges as a correct store does.
func (s *Store) lastMicroExpired(c domain.Counter, now domain.Instant, perCheck bool) bool {
	if perCheck == (s.cfg.Fault == PerCheckTakesLastMicrosecond) {
		return c.Expires <= now+1
	}
	return c.Expires <= now
}

// clampedWithoutRaise is CleanupLeavesClampBelow's cleanup time: the
// clock's reading raised to the latest time admissions read, which it
// does not raise in turn.
func (s *Store) clampedWithoutRaise() domain.Instant {
	return max(domain.InstantOf(s.cfg.Clock()), domain.Instant(s.last.Load()))
}

// sortPairOnly is SortsOnlyPairs's lock order: a pair of keys sorted,
// any other batch left in caller order.
func sortPairOnly(order []domain.CounterKey) {
	if len(order) == 2 {
		slices.SortFunc(order, domain.CounterKey.Compare)
	}
}

// lockPartitionsDescending takes every partition lock, highest first, for
// StatsLocksPartitionsDescending, and returns their release.
func (s *Store) lockPartitionsDescending() (unlock func()) {
	for p := len(s.partLocks) - 1; p >= 0; p-- {
		s.partLocks[p].Lock()
	}
	return func() {
		for p := range s.partLocks {
			s.partLocks[p].Unlock()
		}
	}
}
