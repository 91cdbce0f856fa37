package brokenstores

import (
	"context"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// errClosedUntyped is the closed store's error under ClosedErrorUntyped:
// the right meaning, not the shared sentinel.
var errClosedUntyped = errors.New("store is closed")

// Error is a failed operation; it consumed nothing.
type Error struct {
	Op  string
	Err error
}

func (e *Error) Error() string { return "brokenstores: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// MayHaveConsumedQuota returns false: the store writes only after a
// successful evaluation.
func (e *Error) MayHaveConsumedQuota() bool { return false }

// KeyError is the error of DoneContextErrorKeyField: its message is clean,
// but its exported Key field holds the counter key.
type KeyError struct {
	Key [domain.CounterKeySize]byte
	Err error
}

func (e *KeyError) Error() string { return "brokenstores: admit: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *KeyError) Unwrap() error { return e.Err }

// MayHaveConsumedQuota returns false: nothing was admitted.
func (e *KeyError) MayHaveConsumedQuota() bool { return false }

// KeyStringError is the error of DoneContextErrorKeyString: its message
// is clean, but its exported Key field holds the counter key's raw bytes
// as a string.
type KeyStringError struct {
	Key string
	Err error
}

func (e *KeyStringError) Error() string { return "brokenstores: admit: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *KeyStringError) Unwrap() error { return e.Err }

// MayHaveConsumedQuota returns false: nothing was admitted.
func (e *KeyStringError) MayHaveConsumedQuota() bool { return false }

// cleansPerCheck reports whether each check removes expired counters from
// its partition before it reads.
func (s *Store) cleansPerCheck() bool {
	return s.cfg.CleanupPerCheck > 0 || s.cfg.Fault == CleansActivePerCheck || s.cfg.Fault == PerCheckCleanupKeepsSlots ||
		s.cfg.Fault == BatchRenewalClaimsSlotPerCheck || s.cfg.Fault == StatsEntriesActiveAtLastAdmission ||
		s.cfg.Fault == PerCheckTakesLastMicrosecond || s.sweepFault()
}

// errNilContextUntyped is the nil-context error under NilContextUntyped:
// the right meaning, not the shared sentinel.
var errNilContextUntyped = errors.New("nil context")

// nilContext returns the error for a nil ctx, or nil when ctx is not nil
// or the fault skips the check.
func (s *Store) nilContext(op string, ctx context.Context) error {
	switch {
	case ctx != nil || s.cfg.Fault == PanicsOnNilContext:
		return nil
	case s.cfg.Fault == NilContextUntyped:
		return &Error{Op: op, Err: errNilContextUntyped}
	}
	return &Error{Op: op, Err: ports.ErrNilContext}
}

// usable returns why the store cannot admit k, or nil.
func (s *Store) usable(ctx context.Context, k domain.CounterKey) error {
	if s.cfg.Fault == ClosedBeforeNilContext && s.closed.Load() {
		return &Error{Op: "admit", Err: ports.ErrClosed}
	}
	if err := s.nilContext("admit", ctx); err != nil {
		return err
	}
	if s.cfg.Fault != DoneContextBeforeClosed {
		if err := s.closedError(k); err != nil {
			return err
		}
	}
	if err := s.doneContextError(ctx, k); err != nil {
		return err
	}
	if ctx.Err() != nil {
		s.refusedForContext(k)
	}
	switch err := ctx.Err(); {
	case err == nil, s.cfg.Fault == IgnoresDoneContext:
	case s.cfg.Fault == DoneContextRawError:
		return err
	case s.cfg.Fault == DoneContextErrorNamesKey:
		b := k.Bytes()
		return &Error{Op: "admit", Err: fmt.Errorf("counter %x: %w", b[:], err)}
	case s.cfg.Fault == DoneContextErrorKeyField:
		return &KeyError{Key: k.Bytes(), Err: err}
	case s.cfg.Fault == DoneContextErrorKeyBase32:
		b := k.Bytes()
		return &Error{Op: "admit", Err: fmt.Errorf("counter %s: %w", base32.StdEncoding.EncodeToString(b[:]), err)}
	case s.cfg.Fault == DoneContextErrorKeyQuoted:
		b := k.Bytes()
		return &Error{Op: "admit", Err: fmt.Errorf("subject %q: %w", b[32:], err)}
	case s.cfg.Fault == DoneContextErrorKeySpacedHex:
		b := k.Bytes()
		return &Error{Op: "admit", Err: fmt.Errorf("subject % x: %w", b[32:], err)}
	case s.cfg.Fault == DoneContextErrorLockID:
		b := k.Bytes()
		return &Error{Op: "admit", Err: fmt.Errorf("lock %d: %w", int64(binary.BigEndian.Uint64(b[32:40])), err)}
	case s.cfg.Fault == DoneContextErrorKeyString:
		b := k.Bytes()
		return &KeyStringError{Key: string(b[:]), Err: err}
	case s.cfg.Fault == DoneContextErrorKeyBytea:
		b := k.Bytes()
		return &Error{Op: "admit", Err: fmt.Errorf("subject_key '%s': %w", bytea(b[32:]), err)}
	case s.cfg.Fault == DoneContextCause:
		return &Error{Op: "admit", Err: context.Cause(ctx)}
	case s.cfg.Fault == DoneContextErrorKeyShortID:
		b := k.Bytes()
		return &Error{Op: "admit", Err: fmt.Errorf("subject %x: %w", b[32:38], err)}
	default:
		return &Error{Op: "admit", Err: err}
	}
	return s.closedError(k)
}

// closedError returns the error of an admission of k on a closed store, or
// nil while the store is open (or the fault ignores Close).
func (s *Store) closedError(k domain.CounterKey) error {
	if !s.closed.Load() {
		return nil
	}
	switch s.cfg.Fault {
	case IgnoresClose:
		return nil
	case PanicsWhenClosed:
		panic("brokenstores: admission on a closed store")
	case ClosedErrorMayHaveConsumed:
		return errors.New("brokenstores: admit: store is closed")
	case ClosedErrorNamesKey:
		b := k.Bytes()
		return &Error{Op: "admit", Err: fmt.Errorf("key %x: %w", b[32:], ports.ErrClosed)}
	case ClosedErrorUntyped:
		return &Error{Op: "admit", Err: errClosedUntyped}
	case ClosedErrorIsInvalidInput:
		return &Error{Op: "admit", Err: fmt.Errorf("%w: %w", domain.ErrInvalidInput, ports.ErrClosed)}
	}
	return &Error{Op: "admit", Err: ports.ErrClosed}
}

// Close makes every later operation fail closed.
func (s *Store) Close() error {
	s.closed.Store(true)
	if s.cfg.Fault == CloseReleasesCounters {
		// The defect: admissions in flight still write to the map.
		s.mu.Lock()
		s.entries = nil
		s.mu.Unlock()
	}
	return nil
}

// CleanupExpired removes at most max expired counters, those that expire
// first first, and returns how many it removed. It skips a counter whose
// key an admission holds. It checks its arguments and state in the order
// [ports.Cleaner] documents: a negative max, a nil ctx, a closed store, a
// zero max, a done ctx.
func (s *Store) CleanupExpired(ctx context.Context, max int) (int, error) {
	if s.cfg.Fault == CleanupContextBeforeNegative && ctx != nil {
		if err := ctx.Err(); err != nil {
			return 0, &Error{Op: "cleanup", Err: err}
		}
	}
	if s.cfg.Fault == CleanupNilContextBeforeNegative && ctx == nil {
		return 0, &Error{Op: "cleanup", Err: ports.ErrNilContext}
	}
	if max < 0 {
		switch s.cfg.Fault {
		case CleanupNegativeMeansAll:
			max = math.MaxInt
		case CleanupNegativeUntyped:
			return 0, &Error{Op: "cleanup", Err: errors.New("cleanup maximum is negative")}
		default:
			return 0, &Error{Op: "cleanup", Err: ports.ErrNegativeMax}
		}
	}
	if err := s.nilContext("cleanup", ctx); err != nil {
		return 0, err
	}
	if max == 0 && s.cfg.Fault == CleanupZeroSkipsClosed {
		return 0, nil
	}
	if s.closed.Load() && s.cfg.Fault != IgnoresClose {
		return 0, &Error{Op: "cleanup", Err: ports.ErrClosed}
	}
	if s.cfg.Fault == CleanupContextBeforeZero || s.cfg.Fault == PanicsOnNilContext && ctx == nil {
		if err := ctx.Err(); err != nil {
			return 0, &Error{Op: "cleanup", Err: err}
		}
	}
	if max == 0 {
		return 0, nil
	}
	if s.cfg.Fault != CleanupIgnoresContext {
		if err := ctx.Err(); err != nil {
			s.refusedForContext(domain.CounterKey{})
			return 0, &Error{Op: "cleanup", Err: err}
		}
	}
	max = s.cappedMax28(s.narrowedMax(max)) // hunt28.go
	if s.cfg.Fault == CleanupCutShortReportsNone {
		return s.cleanupInRounds(ctx, max)
	}
	if removed, ok := s.cleanup25(max); ok {
		return removed, nil
	}
	if s.cfg.Fault == CleanupLocksPartitionsDescending {
		// The defect: admissions take partition locks upwards.
		for p := s.cfg.Partitions - 1; p >= 0; p-- {
			s.partLocks[p].Lock()
			defer s.partLocks[p].Unlock()
		}
	}
	if s.cfg.Fault == CleanupGathersByPartition || s.cfg.Fault == CleanupGatherFreesAnyway {
		return s.cleanupGathered(max), nil
	}
	if s.locksKeyPartitions() {
		return s.cleanupUnderPartitionLocks(max), nil
	}
	if s.cfg.Fault == CleanupDeletesWithoutRecheck || s.cfg.Fault == CleanupHoldsClockLock || s.cfg.Fault == CleanupFreesSlotOfRenewed {
		return s.cleanupInTwoSteps(max), nil
	}
	if s.cfg.Fault == CleanupLowersClamp {
		// The defect: cleanup's own clock read replaces the latest time.
		s.last.Store(int64(domain.InstantOf(s.cfg.Clock())))
	}
	now := s.cleanupNow()
	s.mu.Lock()
	defer s.mu.Unlock()
	if removed, ok := s.cleanup27(now, max); ok {
		return removed, nil // hunt27.go
	}
	switch s.cfg.Fault {
	case CleanupIgnoresMax:
		max = math.MaxInt
	case CleanupMaxPerPartition:
		removed := 0
		for p := range s.cfg.Partitions {
			removed += s.removeExpired(p, now, max, nil)
		}
		return removed, nil
	}
	if s.cfg.Fault == CleanupSkipsAfterRemoval {
		return s.removeSkipping(now, max), nil
	}
	stored := len(s.entries)
	removed := s.cleaned29(s.removeExpired(-1, now, max, nil), max, stored) // hunt29.go
	if removed == 0 && s.cfg.Fault == CleanupTypedNilError {
		var none *Error
		return 0, none
	}
	return removed, nil
}

// removeExpired removes up to max expired counters of partition p (of every
// partition when p < 0), earliest expiry first, except keys an admission
// holds. skip holds the keys of the check cleaning on its way, which it
// renews in place; it is nil for CleanupExpired. The caller holds s.mu.
func (s *Store) removeExpired(p int, now domain.Instant, max int, skip []domain.CounterKey) int {
	type candidate struct {
		k domain.CounterKey
		e domain.Instant
	}
	var cs []candidate
	for k, c := range s.entries {
		if p >= 0 && s.PartitionOf(k) != p || s.cleansElsewhere(k) || s.skipsPartition26(k, p) {
			continue
		}
		expired := c.Expires <= now
		switch s.cfg.Fault {
		case CleanupStaleExpiryIndex:
			// The defect: the index still holds the expiry the counter had
			// when it was inserted.
			expired = s.firstExpiry[k] <= now
		case CleanupKeepsCounterAtEnd:
			expired = c.Expires < now
		case SweepSparesWindowEndingNow:
			expired = sweepExpired(c, now, skip != nil)
		case CleanupSweepsCurrentMillisecond:
			// The defect: the expiry index has a bucket per whole
			// millisecond, and the current bucket is swept with the past.
			expired = c.Expires < now-now%domain.Instant(time.Millisecond/time.Microsecond)+domain.Instant(time.Millisecond/time.Microsecond)
		case CleanupRemovesActive, CleansActivePerCheck:
			expired = true
		case CleanupByTTLSeconds:
			expired = ttlSecondsExpired(c, now) // hunt28.go
		case CleanupTakesLastMicrosecond, PerCheckTakesLastMicrosecond:
			expired = s.lastMicroExpired(c, now, skip != nil) // hunt22.go
		}
		if expired && !slices.Contains(skip, k) {
			cs = append(cs, candidate{k, c.Expires})
		}
	}
	slices.SortFunc(cs, func(a, b candidate) int { return int(a.e - b.e) })
	removed := 0
	for _, c := range cs {
		if removed >= max {
			break
		}
		if !s.tryRemove(c.k, skip != nil) {
			continue
		}
		removed++
	}
	return removed
}

// cleanupInTwoSteps is CleanupExpired for CleanupDeletesWithoutRecheck,
// CleanupHoldsClockLock and CleanupFreesSlotOfRenewed: it collects up to max expired counters, earliest
// expiry first, then deletes each under its key's lock, waiting for it.
// CleanupDeletesWithoutRecheck deletes what it collected whatever the
// counter has become since; CleanupHoldsClockLock looks again, but holds
// the clock lock, which admissions take after their key locks, from its
// clock sample to its last delete.
func (s *Store) cleanupInTwoSteps(max int) int {
	var now domain.Instant
	if s.cfg.Fault == CleanupHoldsClockLock {
		s.clockMu.Lock()
		defer s.clockMu.Unlock()
		now = s.clampedNow()
	} else {
		now = s.now()
	}
	type candidate struct {
		k domain.CounterKey
		e domain.Instant
	}
	s.mu.Lock()
	var cs []candidate
	for k, c := range s.entries {
		if c.Expires <= now {
			cs = append(cs, candidate{k, c.Expires})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(cs, func(a, b candidate) int { return int(a.e - b.e) })
	removed := 0
	for _, c := range cs[:min(len(cs), max)] {
		s.keyMu.Lock()
		l, ok := s.keyLocks[c.k]
		if !ok {
			l = new(sync.Mutex)
			s.keyLocks[c.k] = l
		}
		s.keyMu.Unlock()
		l.Lock()
		s.mu.Lock()
		e, ok := s.entries[c.k]
		if ok && (s.cfg.Fault == CleanupDeletesWithoutRecheck || !e.Active(now)) {
			delete(s.entries, c.k)
			delete(s.firstExpiry, c.k)
			delete(s.versions, c.k)
			s.stored[s.PartitionOf(c.k)]--
			removed++
		} else if s.cfg.Fault == CleanupFreesSlotOfRenewed {
			// The defect: the slot's write does not depend on the delete's.
			s.stored[s.PartitionOf(c.k)]--
		}
		s.mu.Unlock()
		l.Unlock()
	}
	return removed
}

// tryRemove deletes k unless an admission holds its lock; perCheck says a
// check is cleaning on its way. The caller holds s.mu.
func (s *Store) tryRemove(k domain.CounterKey, perCheck bool) bool {
	s.keyMu.Lock()
	l, ok := s.keyLocks[k]
	if s.cfg.Fault == CleanupDropsKeyLock && !perCheck {
		delete(s.keyLocks, k)
		ok = false
	}
	s.keyMu.Unlock()
	if ok {
		if !l.TryLock() {
			return false
		}
		defer l.Unlock()
	}
	s.removed29(k) // hunt29.go
	delete(s.entries, k)
	delete(s.firstExpiry, k)
	delete(s.versions, k)
	switch f := s.cfg.Fault; {
	case f == CleanupKeepsSlots, f == PerCheckCleanupKeepsSlots && perCheck:
	case f == CleanupFreesTwice:
		s.stored[s.PartitionOf(k)] -= 2
	default:
		s.stored[s.PartitionOf(k)]--
		if s.cfg.Fault == CapacityPerProcess {
			processSlot(s.PartitionOf(k), -1)
		}
	}
	s.removeIndex(k)
	if s.cfg.Fault == CleanupRemovesSubject && !perCheck {
		s.removeSubject(k)
	}
	return true
}

// evictFirstExpiring removes the counter of partition p that expires
// first, active or not, except the keys in skip (EvictsLiveKeys). The
// caller holds s.mu.
func (s *Store) evictFirstExpiring(p int, skip []domain.CounterKey) {
	var victim domain.CounterKey
	var earliest domain.Instant
	found := false
	for k, c := range s.entries {
		if s.PartitionOf(k) != p || slices.Contains(skip, k) {
			continue
		}
		if !found || c.Expires < earliest {
			victim, earliest, found = k, c.Expires, true
		}
	}
	if found {
		delete(s.entries, victim)
		s.stored[p]--
	}
}

// Stats reports the counters stored in each partition.
func (s *Store) Stats(ctx context.Context) (ports.Stats, error) {
	if s.cfg.Fault == StatsPanicsOnNilContext {
		if err := ctx.Err(); err != nil {
			return ports.Stats{}, &Error{Op: "stats", Err: err}
		}
	}
	if st, err, ok := s.statsBefore(ctx); ok {
		return st, err
	}
	if ctx == nil {
		return ports.Stats{}, &Error{Op: "stats", Err: ports.ErrNilContext}
	}
	if s.closed.Load() && s.cfg.Fault != IgnoresClose && s.cfg.Fault != StatsBesideClosedError {
		return ports.Stats{}, &Error{Op: "stats", Err: ports.ErrClosed}
	}
	cached, ok, keep := s.tickStats()
	if ok {
		return cached, nil
	}
	var now domain.Instant
	if s.cfg.Fault == StatsCountActiveOnly {
		now = s.now()
	}
	if s.cfg.Fault == StatsLocksPartitionsDescending {
		defer s.lockPartitionsDescending()() // hunt22.go
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := s.cfg.Partitions
	st := ports.Stats{Capacity: int64(parts * s.cfg.Capacity), Shards: parts, Headroom: make([]int64, parts)}
	held := s.statsHeld29(s.statsHeld(slices.Clone(s.stored29()))) // hunt29.go
	switch s.cfg.Fault {
	case StatsCountActiveOnly, RenewalTakesSlot:
		// RenewalTakesSlot's Stats count the counters stored, not its
		// slot counter.
		clear(held)
		for k, c := range s.entries {
			if s.cfg.Fault == RenewalTakesSlot || c.Active(now) {
				held[s.PartitionOf(k)]++
			}
		}
	}
	for p, n := range held {
		if s.cfg.Fault != StatsEntriesNeverShrink {
			st.Entries += int64(n)
		}
		i := p
		if s.cfg.Fault == StatsMisindexed {
			i = parts - 1 - p
		}
		st.Headroom[i] = int64(max(s.cfg.Capacity-n, 0))
	}
	if s.cfg.Fault == StatsEntriesActiveAtLastAdmission {
		st.Entries = s.activeAtLastAdmission()
	}
	if s.cfg.Fault == StatsEntriesNeverShrink {
		st.Entries = int64(s.inserted)
	}
	if s.closed.Load() && s.cfg.Fault == StatsBesideClosedError {
		// The defect: the report travels with the error.
		return st, &Error{Op: "stats", Err: ports.ErrClosed}
	}
	st = s.stats26(st) // hunt26.go
	st = s.stats28(st) // hunt28.go
	st, err := s.statsAfter(ctx, s.spreadHeadroom(s.report(st)))
	if err == nil {
		keep(st)
	}
	return st, err
}
