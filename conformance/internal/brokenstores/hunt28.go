package brokenstores

import (
	"slices"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// This file holds the faults of the twenty-eighth blind hunt: an adapter
// author porting the store to memcached (relative TTLs in whole seconds,
// and the 30-day rule that reads a longer TTL as an absolute time),
// DynamoDB (a TTL attribute in epoch seconds, 25 items a transaction or a
// batch write), etcd or memcached conditional writes that compare only
// the keys they found, MongoDB's int32 $inc or SQLite's second-resolution
// datetime, a write-back LRU in front of a backend, a HyperLogLog of
// subjects for occupancy, or a context error typed as may-have-consumed,
// who wrote it without reading the suite (see fault.go).

// hunt28 is the state of this hunt's faults; the store's mu guards it.
type hunt28 struct {
	// lru is WriteBackLRUDropsEvicted's recency order of the keys written,
	// least recently written first.
	lru []domain.CounterKey
}

const (
	// memcachedRelativeMax is the longest TTL memcached reads as relative:
	// a longer one is a Unix time.
	memcachedRelativeMax = 30 * 24 * time.Hour
	// dynamoItemsPerCall is the items one DynamoDB TransactWriteItems or
	// BatchWriteItem call took.
	dynamoItemsPerCall = 25
	// lruEntries is WriteBackLRUDropsEvicted's cache size.
	lruEntries = 64
)

// ceilSecond is i rounded up to a whole second, as a TTL attribute in
// epoch seconds keeps an expiry.
func ceilSecond(i domain.Instant) domain.Instant {
	u := domain.Instant(time.Second / time.Microsecond)
	if r := i % u; r != 0 {
		return i - r + u
	}
	return i
}

// lapsed28 reports, for this hunt's TTL faults, whether the backend has
// deleted c by now, and whether a fault applies.
func (s *Store) lapsed28(c domain.Counter, now domain.Instant) (bool, bool) {
	w := c.Expires.Sub(c.Start)
	switch s.cfg.Fault {
	case LongWindowTTLReadAsAbsolute:
		// The defect: a TTL over 30 days is a Unix time in January 1970,
		// so memcached drops the item at once.
		return w > memcachedRelativeMax, true
	case TTLWholeSecondsDropsEarly:
		// The defect: the TTL set on creation is the window in whole
		// seconds, rounded down (0, "never", for a window under one).
		ttl := w.Truncate(time.Second)
		return ttl > 0 && ttl < w && now >= c.Start.Add(ttl), true
	}
	return false, false
}

// ttlSecondActive reports, for ActiveUntilTTLSecond and
// ActiveUntilLeaseMinTTL, whether the store still counts c at now though it
// ended: a read filtering on ttl >= now in epoch seconds finds it until
// the second its expiry rounds up to, and a key under an etcd lease lives
// until the lease, granted at least its minimum TTL, runs out.
func (s *Store) ttlSecondActive(c domain.Counter, now domain.Instant) bool {
	if now < c.Expires {
		return false
	}
	switch s.cfg.Fault {
	case ActiveUntilTTLSecond:
		return now < ceilSecond(c.Expires)
	case ActiveUntilLeaseMinTTL:
		return now < c.Start.Add(max(c.Expires.Sub(c.Start), etcdMinLeaseTTL))
	}
	return false
}

// etcdMinLeaseTTL is the shortest lease etcd grants with its default
// election timeout (1.5 times 1 s): a shorter TTL asked for is raised.
const etcdMinLeaseTTL = 1500 * time.Millisecond

// dropsUnprocessed reports whether BatchWriteDropsUnprocessed leaves check
// i of a's write out: the items after the first 25 of a batch write come
// back unprocessed, and the store does not send them again.
func (a *admission) dropsUnprocessed(i int) bool {
	return a.s.cfg.Fault == BatchWriteDropsUnprocessed && i >= dynamoItemsPerCall
}

// ttlSecondsExpired is CleanupByTTLSeconds's expiry test: the counter's
// TTL attribute, its expiry rounded up to a second, has passed.
func ttlSecondsExpired(c domain.Counter, now domain.Instant) bool {
	return ceilSecond(c.Expires) <= now
}

// cappedMax28 is the most CleanupExpired removes in one call: max, or with
// CleanupCappedAt25PerCall what one batch write takes.
func (s *Store) cappedMax28(max int) int {
	if s.cfg.Fault == CleanupCappedAt25PerCall {
		// The defect: one BatchWriteItem call, and its count returned.
		return min(max, dynamoItemsPerCall)
	}
	return max
}

// optimistic28 reports whether every admission runs optimistically.
func (s *Store) optimistic28() bool {
	return s.cfg.Fault == CreateWithoutAbsentCondition
}

// encode28 applies this hunt's column faults to the counter c written
// over before (present) at now.
func (s *Store) encode28(c, before domain.Counter, present bool, now domain.Instant) domain.Counter {
	switch s.cfg.Fault {
	case IncrementNarrowedToInt32:
		// The defect: $inc with NumberInt(cost), on the count read or on
		// nothing for a new or restarted window.
		var base int64
		if present && before.Active(now) {
			base = before.Used
		}
		c.Used = base + int64(int32(c.Used-base))
	case StartTruncatedToSeconds:
		// The defect: the start column is SQLite's datetime text, whole
		// seconds; the end is kept in microseconds.
		c.Start = truncate(c.Start, time.Second)
	}
	return c
}

// stats28 applies this hunt's Stats faults. The caller holds s.mu.
func (s *Store) stats28(st ports.Stats) ports.Stats {
	if s.cfg.Fault == StatsEntriesDistinctSubjects {
		// The defect: entries estimated by a count of distinct subjects.
		seen := make(map[domain.SubjectKey]bool)
		for k := range s.entries {
			seen[k.SubjectKey()] = true
		}
		st.Entries = int64(len(seen))
	}
	return st
}

// distinctSubjects28 is CapacityCountsDistinctSubjects's occupancy of
// partition p for the check a observes: the distinct subjects stored
// there, with those the admission's earlier checks claimed, and whether
// the check's own subject is among them. The caller holds s.mu.
func (s *Store) distinctSubjects28(a *admission, p int) (int, bool) {
	seen := make(map[domain.SubjectKey]bool)
	for k := range s.entries {
		if s.PartitionOf(k) == p {
			seen[k.SubjectKey()] = true
		}
	}
	for j := range a.observing {
		if a.claimed[j] == p {
			seen[a.keys[j].SubjectKey()] = true
		}
	}
	return len(seen), seen[a.keys[a.observing].SubjectKey()]
}

// full28 is CapacityCountsDistinctSubjects's test that partition p has no
// slot for the check a observes: a subject already counted there is taken
// to be stored already. The caller holds s.mu.
func (s *Store) full28(a *admission, p int) bool {
	n, counted := s.distinctSubjects28(a, p)
	return !counted && n >= s.partitionCapacity()
}

// doneContext28 is DoneContextMayHaveConsumed's error for a done ctx.
func (s *Store) doneContext28(err error) error {
	if s.cfg.Fault == DoneContextMayHaveConsumed {
		return &consumedError{Op: "admit", Err: err}
	}
	return nil
}

// consumedError is DoneContextMayHaveConsumed's error: a context error
// mapped as a failed commit is.
type consumedError struct {
	Op  string
	Err error
}

func (e *consumedError) Error() string { return "brokenstores: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *consumedError) Unwrap() error { return e.Err }

// MayHaveConsumedQuota returns true: the defect.
func (e *consumedError) MayHaveConsumedQuota() bool { return true }

// denied28 applies TransactionSplitAt25 to a batch denied at check idx:
// the batch was written in transactions of 25 items, each decided and
// committed before the next, so the chunks before the failing check's
// stand. The caller holds s.mu.
func (a *admission) denied28(idx int) {
	s := a.s
	if s.cfg.Fault != TransactionSplitAt25 {
		return
	}
	done := idx - idx%dynamoItemsPerCall
	for i := range done {
		s.put(a, i, a.keys[i], a.next(i))
	}
}

// wrote28 records k's write for WriteBackLRUDropsEvicted and drops the
// least recently written counter beyond the cache's size, unflushed: the
// backend never saw it. Keys of the admission a stay. The caller holds
// s.mu.
func (s *Store) wrote28(a *admission, k domain.CounterKey) {
	if s.cfg.Fault != WriteBackLRUDropsEvicted {
		return
	}
	if i := slices.Index(s.lru, k); i >= 0 {
		s.lru = slices.Delete(s.lru, i, i+1)
	}
	s.lru = append(s.lru, k)
	for i := 0; len(s.lru) > lruEntries && i < len(s.lru); {
		v := s.lru[i]
		if slices.Contains(a.keys, v) {
			i++
			continue
		}
		s.lru = slices.Delete(s.lru, i, i+1)
		if _, ok := s.entries[v]; ok {
			delete(s.entries, v)
			delete(s.firstExpiry, v)
			delete(s.versions, v)
			s.stored[s.PartitionOf(v)]--
		}
	}
}
