package brokenstores

import (
	"crypto/sha256"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// This file holds the faults of the twenty-fifth blind hunt: an adapter
// author porting the store to a conditional-write database, a write-behind
// cache, float or millisecond columns, truncating or folding key columns,
// or a process-wide table, who wrote it without reading the suite (see
// fault.go).

// hunt25 is the state of this hunt's faults. The store's mu guards the
// write-behind fields; tickMu guards the Stats cache.
type hunt25 struct {
	// flushedStored and flushedEntries are what the backend of a
	// write-behind cache holds: the occupancy and counters as of the start
	// of the latest admission (WriteBehindStats, WriteBehindCleanup).
	flushedStored  []int
	flushedEntries map[domain.CounterKey]domain.Counter
	// pending holds the batches' buffered writes (WriteBehindBatches).
	pending map[domain.CounterKey]domain.Counter

	// tickMu guards tickReport, StatsCachedPerInstant's last report, built
	// at tickAt.
	tickMu     sync.Mutex
	tickReport *ports.Stats
	tickAt     domain.Instant
}

// processSlots is CapacityPerProcess's occupancy table: one count per
// partition index for the whole process, whatever store value counts in
// it.
var processSlots struct {
	mu sync.Mutex
	n  map[int]int
}

// processSlot adds d to partition p's count in the process-wide table.
func processSlot(p, d int) int {
	processSlots.mu.Lock()
	defer processSlots.mu.Unlock()
	if processSlots.n == nil {
		processSlots.n = make(map[int]int)
	}
	processSlots.n[p] += d
	return processSlots.n[p]
}

// optimisticAll reports whether every admission runs optimistically.
func (s *Store) optimisticAll() bool {
	switch s.cfg.Fault {
	case OptimisticRetryKeepsOccupancy, OptimisticRetryDecidesOnFirstRead, OptimisticComparesWindowOnly:
		return true
	}
	return false
}

// unchanged reports whether the stored counter e (ok when stored) is what
// check i read, as the conditional write of OptimisticComparesWindowOnly
// compares it, and whether that fault applies.
func (a *admission) unchanged(i int, e domain.Counter, ok bool) (same, applies bool) {
	if a.s.cfg.Fault != OptimisticComparesWindowOnly {
		return false, false
	}
	b := a.before[i]
	// The defect: the window's times are compared, the count is not.
	return ok == a.present[i] && e.Start == b.Start && e.Expires == b.Expires, true
}

// hunt25Key is the key a keying fault of this hunt keeps k's counter
// under. The first bytes of its fingerprint and subject key are k's, so
// that it stays in k's partition.
func hunt25Key(f Fault, k domain.CounterKey) domain.CounterKey {
	b := k.Bytes()
	switch f {
	case KeysCutAtNulByte:
		// The defect: the subject key ends at its first zero byte.
		if i := slices.Index(b[32:], 0); i >= 0 {
			clear(b[32+i:])
		}
	case KeysCutTo50Bytes:
		clear(b[50:])
	case KeysAsJSONStrings:
		return jsonStringKey(k)
	case KeysFoldRawCase:
		for i := range b {
			if i != 0 && i != 32 && b[i] >= 'A' && b[i] <= 'Z' {
				b[i] += 'a' - 'A'
			}
		}
	default:
		return k
	}
	var fp domain.Fingerprint
	var sub [32]byte
	copy(fp[:], b[:32])
	copy(sub[:], b[32:])
	return domain.NewCounterKey(fp, domain.SubjectKeyFromBytes(sub))
}

// millisecond is one millisecond in instants.
const millisecond = domain.Instant(time.Millisecond / time.Microsecond)

// stored25 returns counter c of check i as this hunt's representation
// faults store it, written by an admission at now.
func (a *admission) stored25(i int, c domain.Counter, now domain.Instant) domain.Counter {
	w := c.Expires.Sub(c.Start)
	switch a.s.cfg.Fault {
	case WindowSecondsTruncated:
		// The defect: time.Duration(secs) drops the fraction.
		c.Expires = c.Start.Add(time.Duration(w.Seconds()) * time.Second)
	case TimesFloatSecondsTruncated:
		back := func(t domain.Instant) domain.Instant {
			secs := float64(t) / 1e6
			return domain.Instant(int64(secs * 1e6))
		}
		c.Start, c.Expires = back(c.Start), back(c.Expires)
	case WindowEndRoundedUpToMillis:
		if r := c.Expires % millisecond; r > 0 && c.Expires < domain.Instant(1<<62) {
			c.Expires += millisecond - r
		}
	case SingleCheckStoresMillis:
		if a.single {
			c.Start, c.Expires = truncate(c.Start, time.Millisecond), truncate(c.Expires, time.Millisecond)
		}
	case AnchorsAtLastSeenTime:
		if a.seenAt > 0 && c.Start == now && (!a.present[i] || !a.before[i].Active(now)) {
			// The defect: the window is anchored at the time of the
			// previous round trip.
			c.Start = a.seenAt
			c.Expires = c.Start.Add(w)
		}
	}
	return c
}

// retryTruncated is CapacityRetryTruncatedToMillis's retry time for a new
// key of a refused in full partition p. The caller holds s.mu.
func (s *Store) retryTruncated(a *admission, i, p int) (domain.Instant, bool) {
	at, has := s.retryAt(p, a.keys[i])
	return at - at%millisecond, has
}

// flushWriteBehind is the start of an admission on a store with a
// write-behind cache: what the cache held is flushed to the backend, and
// batches' buffered writes land (WriteBehindBatches, when not single).
func (a *admission) flushWriteBehind() {
	s := a.s
	switch s.cfg.Fault {
	case WriteBehindStats, WriteBehindCleanup, WriteBehindBatches:
	default:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.cfg.Fault {
	case WriteBehindStats:
		s.flushedStored = slices.Clone(s.stored)
	case WriteBehindCleanup:
		s.flushedEntries = maps.Clone(s.entries)
	case WriteBehindBatches:
		if a.single {
			return
		}
		for k, c := range s.pending {
			s.entries[k] = c
		}
		clear(s.pending)
	}
}

// bufferWrite is WriteBehindBatches's write of counter c under k by a
// batch of two or more checks, which put has just stored: the stored
// value goes back to what it was, and c waits in the buffer. The caller
// holds s.mu.
func (s *Store) bufferWrite(a *admission, i int, k domain.CounterKey, c domain.Counter) {
	if s.cfg.Fault != WriteBehindBatches || a.single || a.n < 2 {
		return
	}
	if s.pending == nil {
		s.pending = make(map[domain.CounterKey]domain.Counter)
	}
	s.pending[k] = c
	if a.present[i] {
		s.entries[k] = a.before[i]
	} else {
		delete(s.entries, k)
	}
}

// statsHeld returns the counters held by each partition as Stats reports
// them, from held, the store's counts. The caller holds s.mu.
func (s *Store) statsHeld(held []int) []int {
	if s.cfg.Fault == WriteBehindStats {
		// The defect: the backend's counts, a write behind.
		if s.flushedStored == nil {
			return make([]int, len(held))
		}
		return slices.Clone(s.flushedStored)
	}
	return held
}

// spreadHeadroom is StatsHeadroomSpread's report: st's free slots spread
// evenly over its partitions.
func (s *Store) spreadHeadroom(st ports.Stats) ports.Stats {
	if s.cfg.Fault != StatsHeadroomSpread || len(st.Headroom) == 0 {
		return st
	}
	var free int64
	for _, h := range st.Headroom {
		free += h
	}
	n := int64(len(st.Headroom))
	for p := range st.Headroom {
		st.Headroom[p] = free / n
		if int64(p) < free%n {
			st.Headroom[p]++
		}
	}
	return st
}

// tickStats is StatsCachedPerInstant's cache: the last report while the
// clock reads the instant it was built at, or ok false and build, which
// stores a report for the instant.
func (s *Store) tickStats() (st ports.Stats, ok bool, keep func(ports.Stats)) {
	if s.cfg.Fault != StatsCachedPerInstant {
		return ports.Stats{}, false, func(ports.Stats) {}
	}
	now := s.now()
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	if s.tickReport != nil && s.tickAt == now {
		st = *s.tickReport
		st.Headroom = slices.Clone(st.Headroom)
		return st, true, nil
	}
	return ports.Stats{}, false, func(st ports.Stats) {
		s.tickMu.Lock()
		defer s.tickMu.Unlock()
		kept := st
		kept.Headroom = slices.Clone(st.Headroom)
		s.tickReport, s.tickAt = &kept, now
	}
}

// dropsLateWrite reports whether a committed admission gives up its write
// because its context ended after the evaluation, and answers as if it
// had written (LateCancelDropsWriteAnswersAllowed).
func (a *admission) dropsLateWrite() bool {
	return a.s.cfg.Fault == LateCancelDropsWriteAnswersAllowed && a.ctx.Err() != nil
}

// cleanup25 is CleanupExpired for CleanupCountsSkipped,
// CleanupStopsAtLockedKey and WriteBehindCleanup, and reports whether
// one applies.
func (s *Store) cleanup25(max int) (int, bool) {
	switch s.cfg.Fault {
	case CleanupCountsSkipped, CleanupStopsAtLockedKey, WriteBehindCleanup:
	default:
		return 0, false
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	view := s.entries
	if s.cfg.Fault == WriteBehindCleanup && s.flushedEntries != nil {
		// The defect: which counters have ended is read from the
		// backend, a write behind the cache it deletes from.
		view = s.flushedEntries
	}
	type candidate struct {
		k domain.CounterKey
		e domain.Instant
	}
	var cs []candidate
	for k, c := range view {
		if _, ok := s.entries[k]; ok && c.Expires <= now {
			cs = append(cs, candidate{k, c.Expires})
		}
	}
	slices.SortFunc(cs, func(a, b candidate) int { return int(a.e - b.e) })
	removed := 0
	for _, c := range cs {
		if removed >= max {
			break
		}
		if s.tryRemove(c.k, false) {
			delete(s.flushedEntries, c.k)
			removed++
			continue
		}
		switch s.cfg.Fault {
		case CleanupCountsSkipped:
			// The defect: a candidate counts, removed or not.
			removed++
		case CleanupStopsAtLockedKey:
			// The defect: a held counter ends the pass.
			return removed, true
		}
	}
	return removed, true
}

// jsonStringKey is KeysAsJSONStrings's key for k: a digest of k's bytes
// encoded as a JSON string, whose first bytes keep k's partition.
func jsonStringKey(k domain.CounterKey) domain.CounterKey {
	b := k.Bytes()
	text, err := json.Marshal(string(b[:]))
	if err != nil {
		return k
	}
	sub := sha256.Sum256(text)
	var fp domain.Fingerprint
	fp[0] = b[0] ^ b[32] ^ sub[0]
	return domain.NewCounterKey(fp, domain.SubjectKeyFromBytes(sub))
}
