package brokenstores

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// lifetimes hold the state of the faults that keep a key's time to live
// apart from its window, and of the faults that clamp the clock by
// something else than every time the store read. The store's mu guards
// the maps.
type lifetimes struct {
	// deadlines: the time each key's backend deletes it
	// (TTLSetOnCreateOnly, ExpiresAtWholeMillis, BatchTTLFromFirstCheck).
	deadlines map[domain.CounterKey]domain.Instant
	// refreshed: the time to live each write of a key sets, a window from
	// that write (CapacityRetryRefreshedTTL).
	refreshed map[domain.CounterKey]domain.Instant
	// partLast: the latest time read by each partition
	// (ClampsFirstPartitionOnly); singleLast: by AdmitCheck
	// (SingleCheckOwnClamp).
	partLast   []atomic.Int64
	singleLast atomic.Int64
}

func newLifetimes(partitions int) lifetimes {
	return lifetimes{
		deadlines: make(map[domain.CounterKey]domain.Instant),
		refreshed: make(map[domain.CounterKey]domain.Instant),
		partLast:  make([]atomic.Int64, partitions),
	}
}

// lapsed reports whether the backend has deleted k's counter c by now, for
// the faults that give a key a deadline of its own, and forgets the
// deadline when it has. The caller holds s.mu.
func (s *Store) lapsed(k domain.CounterKey, c domain.Counter, now domain.Instant) bool {
	if gone, ok := s.lapsed29(k, now); ok {
		return gone // hunt29.go
	}
	if gone, ok := s.lapsed28(c, now); ok {
		return gone // hunt28.go
	}
	switch s.cfg.Fault {
	case TTLSetOnCreateOnly, BatchTTLFromFirstCheck:
	case DeadlineFloatUnixSeconds:
		// The defect: the deadline and the time compared as float64 Unix
		// seconds.
		return floatUnixSeconds(now) >= floatUnixSeconds(c.Expires)
	case ExpiresAtWholeMillis:
		// The defect: PEXPIREAT's whole milliseconds, rounded down.
		return now >= truncate(c.Expires, time.Millisecond)
	default:
		return false
	}
	d, ok := s.deadlines[k]
	if !ok || now < d {
		return false
	}
	delete(s.deadlines, k)
	return true
}

// setDeadline records the time to live a write of c under k for check i
// sets, for the faults that keep one. The caller holds s.mu.
func (s *Store) setDeadline(a *admission, i int, k domain.CounterKey, c domain.Counter) {
	w := c.Expires.Sub(c.Start)
	switch s.cfg.Fault {
	case TTLSetOnCreateOnly:
		// The defect: EXPIRE runs only when INCRBY created the key.
		if _, ok := s.deadlines[k]; !ok || !a.present[i] {
			s.deadlines[k] = c.Start.Add((w + time.Second - 1).Truncate(time.Second))
		}
	case BatchTTLFromFirstCheck:
		// The defect: every key of the batch gets the first check's window.
		if !a.present[i] || c.Start != a.before[i].Start {
			s.deadlines[k] = c.Start.Add(a.check(0).Policy().Window())
		}
	case CapacityRetryRefreshedTTL:
		s.refreshed[k] = domain.Instant(s.last.Load()).Add(w)
	}
}

// observedCounter returns the counter an admission at now observes for a
// stored c: c itself, or what a fault that reads a time to live in whole
// milliseconds makes of it.
func (s *Store) observedCounter(c domain.Counter, now domain.Instant) domain.Counter {
	if s.cfg.Fault == ReadsTTLInWholeMillis && c.Expires > now {
		// The defect: PTTL's whole milliseconds, added to now.
		c.Expires = now.Add(c.Expires.Sub(now).Truncate(time.Millisecond))
	}
	return c
}

// retryExpiry returns the expiry retryAt reads for the stored counter c of
// k, or false when it skips k for a check of refused.
func (s *Store) retryExpiry(k, refused domain.CounterKey, c domain.Counter) (domain.Instant, bool) {
	switch s.cfg.Fault {
	case CapacityRetryFirstWindow:
		return s.firstExpiry[k], true
	case CapacityRetryRefreshedTTL:
		return s.refreshed[k], true
	case CapacityRetrySamePolicy:
		return c.Expires, k.Fingerprint() == refused.Fingerprint()
	}
	return c.Expires, true
}

// retryTime returns the retry time an observation at now reports for a
// partition whose earliest expiry is at.
func (s *Store) retryTime(at, now domain.Instant) domain.Instant {
	switch s.cfg.Fault {
	case CapacityRetryCappedAtDay:
		// The defect: the retry time bounded at a day.
		return min(at, now.Add(24*time.Hour))
	case CapacityRetryFloatUnixMicros:
		return floatUnixMicros(at)
	}
	if s.cfg.Fault == CapacityRetryWholeSeconds && at > now {
		// The defect: TTL's whole seconds, rounded up.
		return now.Add((at.Sub(now) + time.Second - 1).Truncate(time.Second))
	}
	return at
}

// clampFault returns the admission's time under a fault that clamps the
// clock by something else than every time the store read, and whether the
// fault applies.
func (a *admission) clampFault() (domain.Instant, bool) {
	s := a.s
	var last *atomic.Int64
	switch {
	case s.cfg.Fault == ClampsFirstPartitionOnly:
		last = &s.partLast[s.PartitionOf(a.keys[0])]
	case s.cfg.Fault == SingleCheckOwnClamp && a.single:
		last = &s.singleLast
	default:
		return 0, false
	}
	now := int64(domain.InstantOf(s.cfg.Clock()))
	for {
		l := last.Load()
		if now <= l {
			return domain.Instant(l), true
		}
		if last.CompareAndSwap(l, now) {
			return domain.Instant(now), true
		}
	}
}

// raiseClamp raises the latest time read to now (ClampsOnlyOnCommit, once
// an admission writes).
func (s *Store) raiseClamp(now domain.Instant) {
	for {
		l := s.last.Load()
		if int64(now) <= l || s.last.CompareAndSwap(l, int64(now)) {
			return
		}
	}
}

// bytea prints b as PostgreSQL prints a bytea in its escape format
// (DoneContextErrorKeyBytea).
func bytea(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		switch {
		case c == '\\':
			sb.WriteString(`\\`)
		case c >= 0x20 && c < 0x7f:
			sb.WriteByte(c)
		default:
			fmt.Fprintf(&sb, `\%03o`, c)
		}
	}
	return sb.String()
}
