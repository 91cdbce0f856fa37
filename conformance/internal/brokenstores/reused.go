package brokenstores

import (
	"math/bits"
	"slices"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// reused is the state the seventh hunt's faults keep from one call to
// the next: buffers and reports a store reuses to save an allocation or a
// scan, and hands out or reads again when it should not.
type reused struct {
	// lastRetry is CapacityRetryKeptFromLastDenial's retry time buffer.
	lastRetry    domain.Instant
	hasLastRetry bool
	// headroom is StatsReusesHeadroom's one headroom slice for every
	// report.
	headroom []int64
	// cachedStats is StatsCachesReport's last report, handed out again
	// while the counts match cachedCounts, its own copy of them.
	cachedStats  *ports.Stats
	cachedCounts []int64
}

// retryFault returns the retry time a retry fault of this hunt gives for
// check i of a, refused for capacity in partition p at now, and whether
// one applies. The caller holds s.mu.
func (s *Store) retryFault(a *admission, i, p int, now domain.Instant) (at domain.Instant, has, applies bool) {
	switch s.cfg.Fault {
	case CapacityRetryTruncatedToMillis:
		at, has = s.retryTruncated(a, i, p) // hunt25.go
		return at, has, true
	case CapacityRetrySkipsBatchKeys:
		at, has = s.retrySkippingBatch(a, p) // hunt24.go
		return at, has, true
	case CapacityRetryOwnWindow:
		// The defect: every counter of the partition is taken to have
		// the refused check's window.
		for k, e := range s.entries {
			if s.PartitionOf(k) == p && (!has || e.Start < at) {
				at, has = e.Start, true
			}
		}
		return at.Add(a.check(i).Policy().Window()), has, true
	case CapacityRetryActiveOnly:
		at, has = s.retryActiveOnly(p, now)
		return at, has, true
	case CapacityRetryKeptFromLastDenial:
		for k, e := range s.entries {
			if s.PartitionOf(k) == p && e.Active(now) && (!has || e.Expires < at) {
				at, has = e.Expires, true
			}
		}
		if has {
			s.lastRetry, s.hasLastRetry = at, true
		}
		// The defect: with no active counter, the buffer keeps the last
		// denial's retry time.
		return s.lastRetry, s.hasLastRetry, true
	}
	return 0, false, false
}

// partitionCapacity returns the counters a partition may hold: the
// configured capacity, or the next power of two of it with
// CapacityRoundedToPowerOfTwo.
func (s *Store) partitionCapacity() int {
	c := s.cfg.Capacity
	if s.cfg.Fault == CapacityRoundedToPowerOfTwo {
		return 1 << bits.Len(uint(c-1))
	}
	return c
}

// report returns st as Stats hands it out: itself, or in memory the store
// keeps (StatsReusesHeadroom, StatsCachesReport). The caller holds s.mu.
func (s *Store) report(st ports.Stats) ports.Stats {
	switch s.cfg.Fault {
	case StatsReusesHeadroom:
		if s.headroom == nil {
			s.headroom = make([]int64, len(st.Headroom))
		}
		copy(s.headroom, st.Headroom)
		st.Headroom = s.headroom
	case StatsCachesReport:
		counts := append([]int64{st.Entries}, st.Headroom...)
		if s.cachedStats != nil && slices.Equal(counts, s.cachedCounts) {
			// The defect: the report handed out before, whose headroom
			// slice its caller may have written into.
			return *s.cachedStats
		}
		s.cachedStats, s.cachedCounts = &st, counts
	}
	return st
}
