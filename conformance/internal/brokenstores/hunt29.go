package brokenstores

import (
	"slices"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// This file holds the faults of the twenty-ninth blind hunt: an adapter
// author who puts a local "denied until reset" cache in front of the
// single-check path, counts cleanup's work or MySQL's rows affected
// instead of what changed, keeps a subject's counters in one Redis hash
// under one TTL, gives EXPIRE milliseconds, runs a batch as one script
// per Redis Cluster hash slot, writes after MULTI without WATCH, retries
// a timed-out EVALSHA as EVAL, keeps Cassandra counters (which outlive
// their deletion), reads Stats from a lagging replica, or gathers a
// batch's writes by subject, who wrote it without reading the suite (see
// fault.go).

// hunt29 is the state of this hunt's faults; the store's mu guards it.
type hunt29 struct {
	// denialNotes is the denial cache: for each key a single check was
	// refused on, the cost refused, the mode and the time the note lasts
	// until.
	denialNotes map[domain.CounterKey]refusal
	// renewed counts the renewals in place of each partition
	// (StatsCountsUpsertRowsAffected), or since the last cleanup call
	// (CleanupCountsRenewedInPlace).
	renewed []int
	// hashTTL is SubjectHashSharedTTL's deadline of each subject's hash.
	hashTTL map[domain.SubjectKey]domain.Instant
	// lagged is StatsFromLaggingReplica's replica of the counts each
	// partition holds, as of the commit before the latest.
	lagged []int
	// tombs holds CounterResurrectsAfterDelete's deleted counts.
	tombs map[domain.CounterKey]int64
	// scriptLoaded is whether ScriptRetriedOnColdCache's script is in the
	// server's cache: after the first admission's write.
	scriptLoaded bool
}

// refusal is one note of the denial cache.
type refusal struct {
	cost  int64
	mode  domain.Mode
	until domain.Instant
	// counter is the counter the check was refused on, saturated.
	counter domain.Counter
}

// cachesDenials29 reports whether the single-check path keeps a denial
// cache.
func (s *Store) cachesDenials29() bool {
	switch s.cfg.Fault {
	case DenialCacheIgnoresCost, DenialCachedForRetrySeconds, DenialCacheIgnoresMode:
		return true
	}
	return false
}

// cachedDenial29 answers c from the denial cache, if it holds a note that
// applies, and reports whether it did.
func (s *Store) cachedDenial29(c *domain.Check, d *domain.Decision) bool {
	if !s.cachesDenials29() {
		return false
	}
	now := s.now()
	s.mu.Lock()
	r, ok := s.denialNotes[c.CounterKey()]
	s.mu.Unlock()
	if !ok || now >= r.until {
		return false
	}
	switch s.cfg.Fault {
	case DenialCachedForRetrySeconds:
		if r.cost != c.Cost() || r.mode != c.Policy().Mode() {
			return false
		}
	case DenialCacheIgnoresMode:
		if r.cost != c.Cost() {
			return false
		}
	}
	// The note says the window is spent until r.until: evaluate the check
	// against a spent window ending then, in the mode the note was taken.
	o := domain.Observation{Counter: r.counter}
	o.Counter.Start = o.Counter.Start.Add(r.until.Sub(o.Counter.Expires))
	o.Counter.Expires = r.until
	var next domain.Counter
	check := *c
	if r.mode != c.Policy().Mode() {
		p, err := c.Policy().WithMode(r.mode)
		if err != nil {
			return false
		}
		k, err := domain.NewCheckCost(p, c.SubjectKey(), c.Cost())
		if err != nil {
			return false
		}
		check = k
	}
	if _, err := domain.EvaluateCheck(&check, now, &o, &next, d); err != nil {
		return false
	}
	return true
}

// noteDenial29 takes a note of the single check c refused with d on the
// counter o observed at now.
func (s *Store) noteDenial29(c *domain.Check, o domain.Observation, d domain.Decision) {
	if !s.cachesDenials29() || d.Outcome() != domain.Denied {
		return
	}
	dn, _ := d.Denial()
	retry, _ := dn.RetryAfter()
	if dn.Reason() != domain.QuotaExhausted {
		return
	}
	r := refusal{cost: c.Cost(), mode: c.Policy().Mode(), counter: o.Counter}
	r.counter.Used = c.Policy().Limit()
	r.until = o.Counter.Expires
	if s.cfg.Fault == DenialCachedForRetrySeconds {
		// The defect: the note lasts the Retry-After header's whole
		// seconds, from the window's end back.
		secs, _ := dn.RetryAfterSeconds()
		r.until = o.Counter.Expires.Add(time.Duration(secs)*time.Second - retry)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.denialNotes == nil {
		s.denialNotes = make(map[domain.CounterKey]refusal)
	}
	s.denialNotes[c.CounterKey()] = r
}

// wrote29 records the write of c over the key k of admission a's check i
// for this hunt's faults. The caller holds s.mu.
func (s *Store) wrote29(a *admission, i int, k domain.CounterKey, c domain.Counter) {
	switch s.cfg.Fault {
	case StatsCountsUpsertRowsAffected, CleanupCountsRenewedInPlace:
		if a.present[i] && a.before[i].Used > 0 && c.Start >= a.before[i].Expires {
			if s.renewed == nil {
				s.renewed = make([]int, s.cfg.Partitions)
			}
			s.renewed[s.PartitionOf(k)]++
		}
	case SubjectHashSharedTTL:
		// The defect: PEXPIRE on the subject's hash at every write.
		if s.hashTTL == nil {
			s.hashTTL = make(map[domain.SubjectKey]domain.Instant)
		}
		s.hashTTL[k.SubjectKey()] = c.Expires
	}
}

// statsHeld29 applies StatsCountsUpsertRowsAffected to the counters held
// by each partition. The caller holds s.mu.
func (s *Store) statsHeld29(held []int) []int {
	if s.cfg.Fault == StatsCountsUpsertRowsAffected && s.renewed != nil {
		for p := range held {
			held[p] += s.renewed[p]
		}
	}
	return held
}

// cleaned29 applies this hunt's cleanup faults to a call that removed
// removed counters of at most max, the store holding stored counters before
// it. The caller holds s.mu.
func (s *Store) cleaned29(removed, max, stored int) int {
	switch s.cfg.Fault {
	case CleanupReturnsExamined:
		// The defect: the rows the scan visited, not those it deleted.
		return min(max, stored)
	case CleanupCountsRenewedInPlace:
		n := 0
		for p := range s.renewed {
			n += s.renewed[p]
			s.renewed[p] = 0
		}
		return min(max, removed+n)
	}
	return removed
}

// lapsed29 reports, for SubjectHashSharedTTL, whether the subject's hash
// holding k has lapsed by now, and whether the fault applies.
func (s *Store) lapsed29(k domain.CounterKey, now domain.Instant) (bool, bool) {
	if s.cfg.Fault != SubjectHashSharedTTL {
		return false, false
	}
	at, ok := s.hashTTL[k.SubjectKey()]
	return ok && now >= at, true
}

// encode29 applies ExpireGivenMilliseconds to the counter c written.
func (s *Store) encode29(c domain.Counter) domain.Counter {
	if s.cfg.Fault == ExpireGivenMilliseconds {
		w := c.Expires.Sub(c.Start)
		if w*1000/1000 == w && w*1000 <= domain.MaxWindow {
			c.Expires = c.Start.Add(w * 1000)
		}
	}
	return c
}

// denied29 applies BatchPerSlotScripts to a batch denied at check idx:
// each partition's script ran on its own, so the checks before idx in
// other partitions than idx's were decided allowed and written. The
// caller holds s.mu.
func (a *admission) denied29(idx int) {
	s := a.s
	if s.cfg.Fault != BatchPerSlotScripts || idx < 0 || idx >= a.n {
		return
	}
	p := s.PartitionOf(a.keys[idx])
	for i := range idx {
		if s.PartitionOf(a.keys[i]) != p {
			s.put(a, i, a.keys[i], a.next(i))
		}
	}
}

// lag29 brings StatsFromLaggingReplica's replica up to the commit before
// the one being written. The caller holds s.mu.
func (s *Store) lag29() {
	if s.cfg.Fault == StatsFromLaggingReplica {
		s.lagged = slices.Clone(s.stored)
	}
}

// stored29 is the counts of each partition that Stats reads: the
// primary's, or with StatsFromLaggingReplica the replica's. The caller
// holds s.mu.
func (s *Store) stored29() []int {
	if s.cfg.Fault == StatsFromLaggingReplica {
		if s.lagged == nil {
			return make([]int, len(s.stored))
		}
		return s.lagged
	}
	return s.stored
}

// bySubject29 is the counter BatchWritesBySubject writes for check i of
// a, c being its own: that of the batch's last check of i's subject.
func (a *admission) bySubject29(i int, c domain.Counter) domain.Counter {
	if a.s.cfg.Fault != BatchWritesBySubject {
		return c
	}
	for j := a.n - 1; j > i; j-- {
		if a.keys[j].SubjectKey() == a.keys[i].SubjectKey() {
			return a.next(j)
		}
	}
	return c
}

// removed29 records, for CounterResurrectsAfterDelete, the count of the
// counter under k that is being deleted. The caller holds s.mu.
func (s *Store) removed29(k domain.CounterKey) {
	if s.cfg.Fault != CounterResurrectsAfterDelete {
		return
	}
	if c, ok := s.entries[k]; ok {
		if s.tombs == nil {
			s.tombs = make(map[domain.CounterKey]int64)
		}
		s.tombs[k] += c.Used
	}
}

// recounted29 applies this hunt's counting faults to the counter c that
// check i of a writes at now. The caller holds s.mu.
func (a *admission) recounted29(i int, c domain.Counter, now domain.Instant) domain.Counter {
	s := a.s
	switch s.cfg.Fault {
	case CounterResurrectsAfterDelete:
		// The defect: the increment lands on the deleted counter's value.
		if _, ok := s.entries[a.keys[i]]; !ok {
			c.Used += s.tombs[a.keys[i]]
			delete(s.tombs, a.keys[i])
		}
	case ScriptRetriedOnColdCache:
		if a.cold {
			// The defect: the script ran twice, each adding the cost.
			var base int64
			if a.present[i] && a.before[i].Active(now) {
				base = a.before[i].Used
			}
			c.Used += c.Used - base
		}
	}
	return c
}
