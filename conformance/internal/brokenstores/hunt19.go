package brokenstores

import (
	"math"
	"slices"
	"sync"

	"github.com/runlimit/runlimit/domain"
)

// This file holds the faults of the extents, cleanup-clock and
// removed-while-waiting group (see fault.go).

// retrySampleSize is how many counters CapacityRetrySamplesNewest looks at.
const retrySampleSize = 8

// narrowedMax is the maximum CleanupExpired works to: max itself, or under
// CleanupMaxNarrowedToInt32 what an int32 makes of it.
func (s *Store) narrowedMax(max int) int {
	if s.cfg.Fault != CleanupMaxNarrowedToInt32 || max <= math.MaxInt32 {
		return max
	}
	// The defect: the maximum passes through a 32-bit integer.
	return int(int32(max))
}

// sampledRetryAt is retryAt for CapacityRetrySamplesNewest: the earliest
// expiry among the partition's newest counters (latest start first, key
// order among equals), not among all of them. The caller holds s.mu.
func (s *Store) sampledRetryAt(p int) (domain.Instant, bool) {
	type stored struct {
		k domain.CounterKey
		c domain.Counter
	}
	var all []stored
	for k, c := range s.entries {
		if s.PartitionOf(k) == p {
			all = append(all, stored{k, c})
		}
	}
	slices.SortFunc(all, func(x, y stored) int {
		if x.c.Start != y.c.Start {
			if x.c.Start > y.c.Start {
				return -1
			}
			return 1
		}
		return x.k.Compare(y.k)
	})
	// The defect: only a sample is read.
	all = all[:min(len(all), retrySampleSize)]
	var at domain.Instant
	for i, e := range all {
		if i == 0 || e.c.Expires < at {
			at = e.c.Expires
		}
	}
	return at, len(all) > 0
}

// cleanupNow is the time CleanupExpired removes counters at: the clamped
// time admissions read, or under CleanupReadsUnclampedClock the clock's
// own reading, which neither the clamp raises nor it raises the clamp.
func (s *Store) cleanupNow() domain.Instant {
	if s.cfg.Fault == CleanupReadsUnclampedClock {
		// The defect: the clock read bypasses the clamp.
		return domain.InstantOf(s.cfg.Clock())
	}
	if s.cfg.Fault == CleanupLeavesClampBelow {
		return s.clampedWithoutRaise() // hunt22.go
	}
	return s.now()
}

// presenceBeforeLocks records, for NewKeysJudgedBeforeLocks, which keys
// of a are stored before a takes any lock; nil for every other fault.
func (a *admission) presenceBeforeLocks() []bool {
	s := a.s
	if s.cfg.Fault != NewKeysJudgedBeforeLocks && s.cfg.Fault != NewKeysJudgedBeforePartitionLocks {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make([]bool, a.n)
	for i, k := range a.keys {
		_, seen[i] = s.entries[k]
	}
	return seen
}

// judgedStored reports whether check i, found absent under the locks, was
// read as stored before them (NewKeysJudgedBeforeLocks): the defect then
// creates it without a slot.
func (a *admission) judgedStored(i int) bool {
	return a.seenBeforeLocks != nil && a.seenBeforeLocks[i]
}

// locksKeyPartitions reports whether an admission takes the partition
// locks of all its keys, stored or new (NewKeysJudgedBeforePartitionLocks),
// so that a cleanup holding partition locks alone excludes it.
func (s *Store) locksKeyPartitions() bool {
	return s.cfg.Fault == NewKeysJudgedBeforePartitionLocks || s.cfg.Fault == CleanupChunksWithoutRecheck ||
		s.cfg.Fault == ClockMutexBeforeLocks
}

// cleanupUnderPartitionLocks is CleanupExpired for
// NewKeysJudgedBeforePartitionLocks and CleanupChunksWithoutRecheck: partition by partition in ascending
// order, it takes the partition's lock, reads the clock and removes up to
// what is left of max expired counters there, earliest expiry first,
// without asking for their key locks: every admission reads and writes
// under the partition locks of its keys.
func (s *Store) cleanupUnderPartitionLocks(max int) int {
	removed := 0
	for p := 0; p < s.cfg.Partitions && removed < max; p++ {
		s.partLocks[p].Lock()
		now := s.now()
		s.mu.Lock()
		type ended struct {
			k domain.CounterKey
			e domain.Instant
		}
		var es []ended
		for k, c := range s.entries {
			if s.PartitionOf(k) == p && c.Expires <= now {
				es = append(es, ended{k, c.Expires})
			}
		}
		slices.SortFunc(es, func(x, y ended) int { return int(x.e - y.e) })
		for _, e := range es[:min(len(es), max-removed)] {
			if s.cfg.Fault == CleanupChunksWithoutRecheck {
				// The defect: a chunk of one, the lock yielded to waiting
				// admissions before it, and the counter not looked at again.
				s.mu.Unlock()
				s.partLocks[p].Unlock()
				s.letQueueIn(p)
				s.partLocks[p].Lock()
				s.mu.Lock()
				if _, ok := s.entries[e.k]; !ok {
					continue
				}
			}
			delete(s.entries, e.k)
			delete(s.firstExpiry, e.k)
			delete(s.versions, e.k)
			s.stored[p]--
			s.removeIndex(e.k)
			removed++
		}
		s.mu.Unlock()
		s.partLocks[p].Unlock()
	}
	return removed
}

// chunkWaits is CleanupChunksWithoutRecheck's queue of the admissions
// waiting for each partition's lock. Its cleanup lets every admission
// queued for the lock in before it takes the lock back for its next
// chunk, as a database's lock manager grants a lock to the transactions
// queued for it before a new request of the one that let it go: with a
// bare yield (runtime.Gosched) the Go scheduler chose whether the
// waiting renewal got in, and the fault escaped its case about one run
// in a hundred.
type chunkWaits struct {
	queueMu sync.Mutex
	queued  sync.Cond // signalled on queueMu when an admission got its lock
	queue   map[int]int
}

// lockPartitionQueued takes partition p's lock for an admission, queued
// for CleanupChunksWithoutRecheck's cleanup to let it in.
func (s *Store) lockPartitionQueued(p int) {
	if s.cfg.Fault != CleanupChunksWithoutRecheck {
		s.partLocks[p].Lock()
		return
	}
	s.queueMu.Lock()
	if s.queue == nil {
		s.queue = map[int]int{}
		s.queued.L = &s.queueMu
	}
	s.queue[p]++
	s.queueMu.Unlock()
	s.partLocks[p].Lock()
	s.queueMu.Lock()
	s.queue[p]--
	s.queued.Broadcast()
	s.queueMu.Unlock()
}

// letQueueIn waits, with no lock of the store held, until every admission
// queued for partition p's lock has got it.
func (s *Store) letQueueIn(p int) {
	s.queueMu.Lock()
	defer s.queueMu.Unlock()
	for s.queue[p] > 0 {
		s.queued.Wait()
	}
}
