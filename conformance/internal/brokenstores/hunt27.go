package brokenstores

import (
	"crypto/sha256"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/runlimit/runlimit/domain"
)

// This file holds the faults of the twenty-seventh blind hunt: an adapter
// author who keeps an insertion-ordered log for cleanup, cuts cleanup off at
// an expiry, ports a cost-one script to costs, writes renewals as inserts,
// keeps a start column in milliseconds, keys rows by printed values or by
// the policy's name, keeps the quota mode or the limit in columns, treats
// shadow mode as a dry run for the capacity ledger, or resets expired
// counters before deciding, who wrote it without reading the suite (see
// fault.go).

// hunt27 is the state of this hunt's faults; the store's mu guards it.
type hunt27 struct {
	// seq is CleanupStopsAtFirstActive's insertion order: the sequence
	// number each stored key got when it was created.
	seq     map[domain.CounterKey]uint64
	nextSeq uint64
	// rows is what ConfigColumnsResetOnChange and ModeSwitchResetsCounter
	// keep beside each counter: the policy and mode that wrote it last.
	rows map[domain.CounterKey]row27
}

// row27 is a stored counter's columns beside the count.
type row27 struct {
	fp   domain.Fingerprint
	mode domain.Mode
}

func newHunt27() hunt27 {
	return hunt27{seq: make(map[domain.CounterKey]uint64), rows: make(map[domain.CounterKey]row27)}
}

// lapsedRow stands for a stored counter that a row-reset fault reads as
// over: a valid counter, for any policy, that ended before any time.
var lapsedRow = domain.Counter{Used: 1, Start: -2, Expires: -1}

// hunt27Key is the key a keying fault of this hunt keeps c's counter
// under, and whether one applies.
func (s *Store) hunt27Key(c domain.Check) (domain.CounterKey, bool) {
	k := c.CounterKey()
	p := c.Policy()
	switch s.cfg.Fault {
	case KeysByPrintedSubject:
		// The defect: the subject key prints redacted, so every subject of
		// a policy is one row.
		fp := k.Fingerprint()
		return domain.NewCounterKey(sha256.Sum256([]byte(fmt.Sprintf("%v/%v", fp, k.SubjectKey()))), domain.SubjectKeyFromBytes([32]byte{})), true
	case ConfigColumnsResetOnChange:
		fp := fieldsKey(p.ID().String(), p.Scope().String(), 0, 0)
		sk := k.SubjectKey().Bytes()
		fp[0] = byte(s.PartitionOf(k)) ^ sk[0]
		return domain.NewCounterKey(fp, k.SubjectKey()), true
	case KeysFoldIdentifierCase, KeysSanitizeIdentifiers, KeysCleanScopePath:
		id, scope := p.ID().String(), p.Scope().String()
		switch s.cfg.Fault {
		case KeysFoldIdentifierCase:
			// The defect: a case-insensitive collation on the key columns.
			id, scope = strings.ToLower(id), strings.ToLower(scope)
		case KeysSanitizeIdentifiers:
			// The defect: the identifiers made safe for a key name.
			id, scope = sanitized(id), sanitized(scope)
		case KeysCleanScopePath:
			// The defect: the scope read as a path and cleaned.
			scope = path.Clean(scope)
		}
		fp := fieldsKey(id, scope, p.Limit(), p.Window().Milliseconds())
		sk := k.SubjectKey().Bytes()
		fp[0] = byte(s.PartitionOf(k)) ^ sk[0]
		return domain.NewCounterKey(fp, k.SubjectKey()), true
	case PartitionByFingerprintOnly:
		// The ledger's shard is the fingerprint's first byte alone: the
		// key is kept where that puts it, a partition PartitionOf does not
		// name. The XOR keeps distinct keys distinct.
		fp := k.Fingerprint()
		sk := k.SubjectKey().Bytes()
		fp[0] ^= sk[0]
		return domain.NewCounterKey(fp, k.SubjectKey()), true
	}
	return k, false
}

// sanitized is id with every mark a key name may not hold ('-', '.', ':'
// and '/') replaced by '_'.
func sanitized(id string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune("-.:/", r) {
			return '_'
		}
		return r
	}, id)
}

// policySlots is CapacityPerPolicy's count of partition p's slots taken
// by the policy of the check a observes: its stored counters there and
// the slots the admission's earlier checks of that policy claimed. The
// caller holds s.mu.
func (s *Store) policySlots(a *admission, p int) int {
	fp := a.keys[a.observing].Fingerprint()
	n := 0
	for k := range s.entries {
		if s.PartitionOf(k) == p && k.Fingerprint() == fp {
			n++
		}
	}
	for j := range a.observing {
		if a.claimed[j] == p && a.keys[j].Fingerprint() == fp {
			n++
		}
	}
	return n
}

// read27 applies the row-reset faults to check i's read. The caller holds
// s.mu.
func (a *admission) read27(i int) {
	s := a.s
	if !a.present[i] {
		return
	}
	r, ok := s.rows[a.keys[i]]
	if !ok {
		return
	}
	c := a.check(i)
	switch s.cfg.Fault {
	case ConfigColumnsResetOnChange:
		// The defect: another limit or window in the row's columns is a
		// new configuration, which starts the row afresh.
		if r.fp != c.Policy().Fingerprint() {
			a.before[i] = lapsedRow
		}
	case ModeSwitchResetsCounter:
		// The defect: a row written in the other mode starts afresh.
		if r.mode != a.mode {
			a.before[i] = lapsedRow
		}
	}
}

// stored27 returns counter c of check i as this hunt's representation
// faults write it at now, and whether the write is skipped.
func (a *admission) stored27(i int, c domain.Counter, now domain.Instant) (domain.Counter, bool) {
	renewal := a.present[i] && !a.before[i].Active(now)
	switch a.s.cfg.Fault {
	case RenewalChargesOneUnit:
		if renewal {
			// The defect: CASE WHEN expired THEN 1 ELSE used + cost.
			c.Used = 1
		}
	case BatchNewKeysChargeOneUnit:
		if !a.present[i] && a.n > 1 {
			c.Used = 1
		}
	case RenewalInsertIgnoresConflict:
		// The defect: an absent or ended window is INSERTed ON CONFLICT
		// DO NOTHING: an ended row not yet cleaned up stays as it was.
		if renewal {
			return c, true
		}
	case StartRoundedUpToMillis:
		if r := c.Start % millisecond; r != 0 {
			c.Start += millisecond - r
		}
	case RenewalKeepsStart:
		if renewal {
			c.Start = a.before[i].Start
		}
	}
	return c, false
}

// put27 records what this hunt's faults keep beside a counter put under k
// for check i. The caller holds s.mu.
func (s *Store) put27(a *admission, i int, k domain.CounterKey, existed bool) {
	switch s.cfg.Fault {
	case CleanupStopsAtFirstActive:
		if !existed {
			s.nextSeq++
			s.seq[k] = s.nextSeq
		}
	case ConfigColumnsResetOnChange, ModeSwitchResetsCounter:
		s.rows[k] = row27{fp: a.check(i).Policy().Fingerprint(), mode: a.mode}
	case ShadowKeysTakeNoSlot:
		if p := a.claimed[i]; p >= 0 && a.mode == domain.Shadow {
			// The defect: a shadow check is a dry run for the ledger, so
			// its new key's slot is not charged (its row is still
			// written, and its delete still frees one).
			s.stored[p]--
		}
	}
}

// denied27 applies this hunt's faults to a batch that did not commit. The
// caller holds s.mu.
func (a *admission) denied27(outcome domain.Outcome) {
	if a.s.cfg.Fault != ShadowDeniedKeepsClaimedSlots || outcome != domain.ShadowDenied {
		return
	}
	// The defect: the slots reserved for the new keys are handed back only
	// when the request is refused; a shadow denial lets it through.
	for _, p := range a.claimed {
		if p >= 0 {
			a.s.stored[p]++
		}
	}
}

// resetExpired27 is ExpiredResetBeforeDeciding's first step: every ended
// window the admission read is started afresh at now with its check's
// cost, before the domain decides, as a script that "resets stale keys"
// first does. A commit writes the same counter again; a denial leaves it.
func (a *admission) resetExpired27(now domain.Instant) {
	s := a.s
	if s.cfg.Fault != ExpiredResetBeforeDeciding {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range a.keys {
		if a.present[i] && !a.before[i].Active(now) {
			c := a.check(i)
			s.entries[k] = domain.Counter{Used: c.Cost(), Start: now, Expires: now.Add(c.Policy().Window())}
		}
	}
}

// cleanup27 is CleanupExpired at now for this hunt's cleanup faults, and
// whether one applies. The caller holds s.mu.
func (s *Store) cleanup27(now domain.Instant, max int) (int, bool) {
	switch s.cfg.Fault {
	case CleanupStopsAtFirstActive:
		return s.cleanupInInsertOrder(now, max), true
	case CleanupCutoffTakesTies:
		return s.cleanupToCutoff(now, max), true
	case CleanupOffByOneMax:
		// The defect: for removed <= max.
		if max < int(^uint(0)>>1) {
			max++
		}
		return s.removeExpired(-1, now, max, nil), true
	case CleanupAtWholeMilliseconds:
		// The defect: WHERE expires <= date_trunc('milliseconds', now).
		return s.removeExpired(-1, now-now%millisecond, max, nil), true
	}
	return 0, false
}

// cleanupInInsertOrder walks the counters in the order they were created
// and stops at the first one still active, as a cleanup reading a log of
// creations does, taking windows to end in the order they began.
func (s *Store) cleanupInInsertOrder(now domain.Instant, max int) int {
	keys := make([]domain.CounterKey, 0, len(s.entries))
	for k := range s.entries {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y domain.CounterKey) int { return int(s.seq[x]) - int(s.seq[y]) })
	removed := 0
	for _, k := range keys {
		if removed >= max || s.entries[k].Active(now) {
			break
		}
		if s.tryRemove(k, false) {
			removed++
		}
	}
	return removed
}

// cleanupToCutoff removes every expired counter that ends no later than
// the max-th earliest end, ties at the cut-off included, as DELETE WHERE
// expires <= (SELECT expires ... ORDER BY expires OFFSET max-1 LIMIT 1)
// does.
func (s *Store) cleanupToCutoff(now domain.Instant, max int) int {
	var ends []domain.Instant
	for _, c := range s.entries {
		if c.Expires <= now {
			ends = append(ends, c.Expires)
		}
	}
	slices.Sort(ends)
	cutoff := now
	if len(ends) > max {
		cutoff = ends[max-1]
	}
	removed := 0
	for k, c := range s.entries {
		if c.Expires <= cutoff && s.tryRemove(k, false) {
			removed++
		}
	}
	return removed
}
