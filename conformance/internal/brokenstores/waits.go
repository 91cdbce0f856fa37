package brokenstores

import (
	"slices"

	"github.com/runlimit/runlimit/domain"
)

// The thirteenth hunt's faults: admissions that wait for a lock and then
// decide on what they read before the wait.

// countEarly returns the partitions' counts of stored counters, each read
// under its partition's lock in a short hold of its own, in ascending
// order, before the admission takes its key locks
// (FreeSlotsCountedBeforeKeyLocks), or nil.
func (a *admission) countEarly() []int {
	s := a.s
	if s.cfg.Fault != FreeSlotsCountedBeforeKeyLocks {
		return nil
	}
	parts := make([]int, 0, len(a.keys))
	for _, k := range a.keys {
		parts = append(parts, s.PartitionOf(k))
	}
	slices.Sort(parts)
	counted := make([]int, s.cfg.Partitions)
	for _, p := range slices.Compact(parts) {
		s.partLocks[p].Lock()
		s.mu.Lock()
		counted[p] = s.stored[p]
		s.mu.Unlock()
		s.partLocks[p].Unlock()
	}
	return counted
}

// useEarlyCount makes the admission decide its new keys' slots on early,
// the counts read before its locks, when it is not nil. The defect: an
// admission that waited for a lock meanwhile finds a slot another
// admission has filled.
func (a *admission) useEarlyCount(early []int) {
	if early != nil {
		a.stored = early
	}
}

// lockEveryPartition returns the partitions an admission locks: with
// CleanupGathersByPartition or CleanupGatherFreesAnyway, those of all its
// keys, stored or not, in ascending order, as a sharded store locks its
// keys' shards; otherwise parts, those of its new keys.
func (a *admission) lockEveryPartition(parts []int) []int {
	if f := a.s.cfg.Fault; f != CleanupGathersByPartition && f != CleanupGatherFreesAnyway && !a.s.locksKeyPartitions() {
		return parts
	}
	parts = parts[:0]
	for _, k := range a.keys {
		parts = append(parts, a.s.PartitionOf(k))
	}
	slices.Sort(parts)
	return slices.Compact(parts)
}

// cleanupGathered is CleanupExpired for CleanupGathersByPartition and
// CleanupGatherFreesAnyway: it collects up to max expired counters
// partition by partition, in ascending order, each under the partition's
// lock, and only then removes them, each under its partition's lock
// again. The defect: it does not look again (CleanupGathersByPartition),
// or looks again but frees the slot whatever it finds
// (CleanupGatherFreesAnyway), so a counter renewed while it waited for a
// later partition's lock is removed, or keeps a slot it no longer counts.
func (s *Store) cleanupGathered(max int) int {
	type gathered struct {
		k   domain.CounterKey
		p   int
		now domain.Instant
	}
	var gs []gathered
	for p := range s.cfg.Partitions {
		s.partLocks[p].Lock()
		now := s.now()
		s.mu.Lock()
		for k, c := range s.entries {
			if len(gs) < max && s.PartitionOf(k) == p && c.Expires <= now {
				gs = append(gs, gathered{k, p, now})
			}
		}
		s.mu.Unlock()
		s.partLocks[p].Unlock()
	}
	removed := 0
	for _, g := range gs {
		s.partLocks[g.p].Lock()
		s.mu.Lock()
		e, ok := s.entries[g.k]
		if ok && (s.cfg.Fault == CleanupGathersByPartition || !e.Active(g.now)) {
			delete(s.entries, g.k)
			delete(s.firstExpiry, g.k)
			delete(s.versions, g.k)
			s.stored[g.p]--
			removed++
		} else if s.cfg.Fault == CleanupGatherFreesAnyway {
			s.stored[g.p]--
		}
		s.mu.Unlock()
		s.partLocks[g.p].Unlock()
	}
	return removed
}
