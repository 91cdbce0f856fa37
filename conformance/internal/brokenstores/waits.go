package brokenstores

import "slices"

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
