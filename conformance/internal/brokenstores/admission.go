package brokenstores

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// admission is one Admit or AdmitCheck on its way through the store: the
// protocol is written once, here, for both.
type admission struct {
	s *Store
	// cold is whether ScriptRetriedOnColdCache's script ran twice for
	// this admission (hunt29.go).
	cold   bool
	ctx    context.Context
	n      int
	single bool
	mode   domain.Mode
	keys   []domain.CounterKey // the counter each check reads and writes
	check  func(i int) domain.Check

	// evaluate hands the observations to the domain at now; next returns
	// the counter to persist for check i; denied returns the failing index
	// and outcome of a batch that did not commit.
	evaluate func(now domain.Instant) (bool, error)
	next     func(i int) domain.Counter
	denied   func() (int, domain.Outcome)
	// answer hands the caller the decision at the time given, evaluated
	// apart from the one evaluate made (answersApart, hunt24.go).
	answer func(at domain.Instant) error

	obs     []domain.Observation
	claimed []int // the partition whose slot check i claimed, or -1
	applied bool  // the claimed slots are already counted (WritesBeforeDeciding)
	// fromMemory: CachesBatches served the observations from memory.
	fromMemory bool
	before     []domain.Counter
	present    []bool
	versions   []uint64 // the versions read (OptimisticVersionRestarts)
	stored     []int    // the partitions' counts, as read

	// early is ClockReadAfterFirstLock's sample, taken with the first key
	// lock held.
	early   domain.Instant
	held    []*sync.Mutex
	stripes []int // the stripes held (StripeLockedTwice)
	parts   []int
	// seenBeforeLocks: which keys were stored before the locks
	// (NewKeysJudgedBeforeLocks, hunt19.go).
	seenBeforeLocks []bool
	// sampled is ClampedClockBeforeLocks's time, taken before the locks
	// (hunt20.go).
	sampled domain.Instant
	// seenAt is the latest time the store had read when the admission
	// began (AnchorsAtLastSeenTime, hunt25.go).
	seenAt domain.Instant
	// observing is the check observe is at (CapacityPerPolicy, hunt27.go).
	observing int
}

// run applies the admission: lock, read every key, read the clock,
// observe, evaluate, write on commit, unlock.
func (a *admission) run() error {
	s := a.s
	a.obs = make([]domain.Observation, a.n)
	a.claimed = make([]int, a.n)
	a.before = make([]domain.Counter, a.n)
	a.versions = make([]uint64, a.n)
	a.present = make([]bool, a.n)
	a.seenAt = domain.Instant(s.last.Load())
	a.flushWriteBehind() // hunt25.go
	if a.single && s.cfg.Fault == SingleCheckSharedReads {
		// The defect: one buffer for every single check's read, which
		// s.mu guards for each read and each observation, but not from
		// one to the other.
		a.before, a.present = s.sharedBefore, s.sharedPresent
	}
	if s.cfg.Fault == OptimisticCountOnly || s.cfg.Fault == OptimisticVersionRestarts || s.cfg.Fault == AnswersAtFirstAttempt || s.optimisticAll() || s.optimistic26() || s.optimistic28() || s.cfg.Fault == MultiWithoutWatch ||
		a.single && (s.cfg.OptimisticSingleChecks || s.cfg.Fault == SingleCheckOrphanedRenewal) {
		return a.runOptimistic()
	}
	if s.cfg.Fault == ReadsBeforeLocking {
		// The defect: the state is read before the locks that should keep
		// it from changing until the write.
		a.read(domain.Instant(s.last.Load()))
	}
	var early domain.Instant
	if s.cfg.Fault == ClockReadBeforeLocks {
		// The defect: the admission's time is taken before its locks, as
		// PostgreSQL's now() is taken when the transaction begins.
		early = domain.InstantOf(s.cfg.Clock())
	}
	a.sampleBeforeLocks()
	counted := a.countEarly()
	a.seenBeforeLocks = a.presenceBeforeLocks()
	if err := a.lock(); err != nil {
		return &Error{Op: "admit", Err: err}
	}
	if err := a.afterLockWait(); err != nil {
		return err // hunt21.go
	}
	locked := true
	defer func() {
		if locked {
			a.unlock()
		}
	}()
	var now domain.Instant
	if s.cleansPerCheck() {
		// As the memory store does: the clock first, so that each check can
		// remove expired counters from its partition before it reads.
		now = a.clock()
		a.read(now)
	} else {
		// As domain.Batch documents: read every key, then the clock.
		if s.cfg.Fault != ReadsBeforeLocking {
			a.read(domain.Instant(s.last.Load()))
		}
		a.shareObservations(false) // hunt26.go
		if s.cfg.Fault == ReleasesLockBeforeDeciding {
			// The defect: the state read here is decided on and written
			// back without the locks that read it.
			a.unlock()
			locked = false
		}
		now = a.clock()
	}
	a.useEarlyCount(counted)
	if s.cfg.Fault == ClockReadBeforeLocks {
		now = early
	}
	if s.cfg.Fault == ClockReadAfterFirstLock {
		now = a.early
	}
	a.shareObservations(true) // hunt26.go
	a.observe(now)
	if s.cfg.Fault == CancelKeepsClaimedSlots && a.ctx.Err() != nil {
		// The defect: the slots claimed for the new keys are counted as
		// taken, and the admission gives up without giving them back.
		s.mu.Lock()
		for _, p := range a.claimed {
			if p >= 0 {
				s.stored[p]++
			}
		}
		s.mu.Unlock()
		return &Error{Op: "admit", Err: a.ctx.Err()}
	}
	if s.cfg.Fault == WritesBeforeDeciding {
		a.writeAhead(now)
	}
	a.resetExpired27(now) // hunt27.go
	commit, err := a.evaluate(a.evaluationTime(now))
	if err != nil {
		return &Error{Op: "admit", Err: err}
	}
	if s.cfg.Fault == ReleasesLockBeforeWrite {
		// The defect: decided under the locks, written after taking them
		// again, when another admission may have read the same state.
		a.unlock()
		locked = false
	}
	if s.cfg.Fault == CreatesAfterRelock && commit && slices.Contains(a.present, false) {
		// The defect: a new counter is written after the locks are taken
		// again, when another admission may have read the key as absent.
		a.unlock()
		locked = false
	}
	if !locked {
		if err := a.lock(); err != nil {
			return &Error{Op: "admit", Err: err}
		}
		locked = true
	}
	if a.dropsCancelledWrite() {
		return &Error{Op: "admit", Err: a.ctx.Err()}
	}
	if commit && a.dropsLateWrite() {
		// The defect: the write is rolled back, and the allowance stands.
		return nil
	}
	if commit {
		if err := a.write(now); err != nil {
			return &Error{Op: "admit", Err: err}
		}
		if err := a.ctx.Err(); err != nil && s.cfg.Fault == LateCancelUnconsumed {
			// The defect: the write stands, but the error says it did not.
			return &Error{Op: "admit", Err: err}
		}
	} else {
		a.deny(now)
	}
	return nil
}

// runOptimistic applies the admission optimistically (OptimisticSingleChecks,
// OptimisticCountOnly, OptimisticVersionRestarts, SingleCheckOrphanedRenewal):
// it reads every key without locks, reads the clock, and then, under the
// locks that stand for the backend's atomic conditional write, goes on only
// if each key is as it read it, deciding on what it read; otherwise it
// starts again.
func (a *admission) runOptimistic() error {
	s := a.s
	var first domain.Instant
	var firstBefore []domain.Counter
	var firstPresent []bool
	for attempt := 0; ; attempt++ {
		if err := a.ctx.Err(); err != nil {
			return &Error{Op: "admit", Err: err}
		}
		a.read(domain.Instant(s.last.Load()))
		now := s.now()
		if attempt == 0 {
			first = now
			firstBefore, firstPresent = slices.Clone(a.before), slices.Clone(a.present)
		}
		if s.cfg.Fault == RetryKeepsFirstClock {
			// The defect: a retry keeps its first attempt's clock.
			now = first
		}
		if err := a.lock(); err != nil {
			return &Error{Op: "admit", Err: err}
		}
		s.mu.Lock()
		same, orphaned := true, false
		for i, k := range a.keys {
			e, ok := s.entries[k]
			if unchanged, applies := a.unchanged(i, e, ok); applies {
				same = same && unchanged // hunt25.go
				continue
			}
			switch {
			case s.cfg.Fault == MultiWithoutWatch:
				// The defect: no WATCH, so EXEC applies whatever changed
				// since the read (hunt29.go).
			case s.cfg.Fault == CreateWithoutAbsentCondition && !a.present[i]:
				// The defect: a key read as absent is written with no
				// condition (a put without create_revision == 0, a set
				// instead of add): another admission's creation since is
				// overwritten.
			case s.cfg.Fault == OptimisticCountOnly:
				// The defect: the condition compares the count alone, not
				// the window it counts in.
				if e.Used != a.before[i].Used {
					same = false
				}
			case s.cfg.Fault == OptimisticVersionRestarts:
				// The defect: the condition compares a version that a
				// counter created anew starts again from.
				if s.versions[k] != a.versions[i] {
					same = false
				}
			case s.cfg.Fault == SingleCheckOrphanedRenewal && a.present[i] && !ok:
				// The defect: cleanup removed the entry it read since; it
				// goes on, and its write lands on that entry, no longer in
				// the table.
				orphaned = true
			case ok != a.present[i] || e != a.before[i]:
				same = false
			}
		}
		// New keys hold their partitions' locks: the occupancy is current.
		if attempt == 0 || s.cfg.Fault != OptimisticRetryKeepsOccupancy {
			a.stored = slices.Clone(s.stored)
		}
		if !same {
			s.reapplyOnConflict(a, now) // hunt26.go
		}
		s.mu.Unlock()
		if !same {
			a.unlock()
			continue
		}
		if s.cfg.Fault == OptimisticRetryDecidesOnFirstRead {
			// The defect: the write's condition is the fresh read, the
			// decision the first.
			copy(a.before, firstBefore)
			copy(a.present, firstPresent)
		}
		a.observe(now)
		commit, err := a.evaluate(now)
		if err != nil {
			a.unlock()
			return &Error{Op: "admit", Err: err}
		}
		switch {
		case commit && !orphaned:
			_ = a.write(now) // CancelBetweenWrites runs locking admissions only
		case !commit:
			a.deny(now)
		}
		a.unlock()
		if s.cfg.Fault == AnswersAtFirstAttempt {
			// The defect: the answer is judged at the first attempt's
			// sample, though a later attempt stood and wrote.
			if err := a.answer(first); err != nil {
				return &Error{Op: "admit", Err: err}
			}
		}
		return nil
	}
}

// clock returns the admission's time: the store's clock, or with
// SingleCheckReusesLastTime on AdmitCheck the latest time any admission
// read.
func (a *admission) clock() domain.Instant {
	if a.s.cfg.Fault == ClampedClockBeforeLocks || a.s.cfg.Fault == ClockMutexBeforeLocks {
		return a.sampled // hunt20.go
	}
	if now, ok := a.clampFault(); ok {
		return now
	}
	if now, ok := a.clock26(); ok {
		return now // hunt26.go
	}
	if a.single && a.s.cfg.Fault == SingleCheckReusesLastTime {
		return domain.Instant(a.s.last.Load())
	}
	return a.s.now()
}

// stripeCount is the number of StripeLockedTwice's lock stripes, and
// stripeWait how long it waits for one before it gives up, as a database
// store's lock timeout does.
const (
	stripeCount = 1024
	stripeWait  = 2 * time.Second
)

// errStripeWait is StripeLockedTwice's lock timeout.
var errStripeWait = errors.New("lock wait timed out")

// lock takes the key locks in ascending key order (caller order with
// CallerOrderLocks), then the partition locks of the keys not stored yet,
// in ascending order.
func (a *admission) lock() error {
	s := a.s
	if s.cfg.Fault == PartitionLocksInKeyOrder || s.cfg.Fault == CreatesAfterRelock {
		a.lockPartitionsInKeyOrder()
		return nil
	}
	order := slices.Clone(a.keys)
	switch s.cfg.Fault {
	case CallerOrderLocks:
	case LockOrderByPolicy:
		slices.SortStableFunc(order, func(x, y domain.CounterKey) int {
			fx, fy := x.Fingerprint(), y.Fingerprint()
			return bytes.Compare(fx[:], fy[:])
		})
	case LocksFirstKeyOnly:
		order = order[:1]
	case LockOrderBySubjectKey:
		sortBySubjectKey(order)
	case SortsOnlyPairs:
		sortPairOnly(order) // hunt22.go
	default:
		slices.SortFunc(order, domain.CounterKey.Compare)
	}
	a.held = a.held[:0]
	var want []*sync.Mutex
	switch {
	case a.single && s.cfg.Fault == SingleCheckOwnLock:
		want = append(want, &s.singleMu)
	case a.mode == domain.Shadow && s.cfg.Fault == ShadowSkipsLocks:
		// The defect: shadow checks take no key lock.
	case s.cfg.Fault == StripeLockedTwice:
		if err := a.lockStripes(); err != nil {
			return err
		}
	default:
		s.keyMu.Lock()
		for _, k := range order {
			if s.cfg.Fault == LocksBySubject {
				// The defect: one lock per subject, taken once per check.
				k = domain.NewCounterKey(domain.Fingerprint{}, k.SubjectKey())
			}
			l, ok := s.keyLocks[k]
			if !ok {
				l = new(sync.Mutex)
				s.keyLocks[k] = l
			}
			want = append(want, l)
		}
		s.keyMu.Unlock()
	}
	for _, l := range want {
		if s.cfg.Fault == ProceedsWhenLockBusy {
			if l.TryLock() {
				a.held = append(a.held, l)
			}
			continue
		}
		if err := a.waitLock(l); err != nil {
			return err // hunt21.go
		}
		a.held = append(a.held, l)
		if len(a.held) == 1 && s.cfg.Fault == ClockReadAfterFirstLock {
			// The defect: the admission's time, read before its other
			// locks (and so not clamped by what they guard).
			a.early = domain.InstantOf(s.cfg.Clock())
		}
	}
	// A key's presence changes only under its key lock (cleanup skips a
	// locked key), so the keys found absent here are the ones that may need
	// a slot.
	s.mu.Lock()
	a.parts = a.parts[:0]
	for _, k := range a.keys {
		if _, ok := s.entries[k]; !ok || s.cfg.Fault == ExpiredNeedsSlot {
			a.parts = append(a.parts, s.PartitionOf(k))
		}
	}
	s.mu.Unlock()
	slices.Sort(a.parts)
	a.parts = slices.Compact(a.parts)
	if s.cfg.Fault == UnguardedCapacity {
		a.parts = a.parts[:0]
	}
	a.parts = a.lockEveryPartition(a.parts)
	for _, p := range a.parts {
		s.lockPartitionQueued(p) // hunt19.go
	}
	return nil
}

// lockStripes takes the stripe of each key, instead of the key's own lock,
// in ascending stripe order, once per key (StripeLockedTwice): a stripe
// two keys share is waited for by the admission that holds it, until the
// wait times out.
func (a *admission) lockStripes() error {
	s := a.s
	idx := make([]int, len(a.keys))
	for i, k := range a.keys {
		idx[i] = int(k.Hash64() % stripeCount)
	}
	slices.Sort(idx)
	a.parts, a.stripes = a.parts[:0], a.stripes[:0]
	timeout := time.NewTimer(stripeWait)
	defer timeout.Stop()
	for _, i := range idx {
		select {
		case s.stripes[i] <- struct{}{}:
			a.stripes = append(a.stripes, i)
		case <-timeout.C:
			a.unlock()
			return errStripeWait
		}
	}
	return nil
}

// lockPartitionsInKeyOrder locks the partition of every key instead of
// the key, once each, in the keys' order (PartitionLocksInKeyOrder), or in
// ascending partition order (CreatesAfterRelock).
func (a *admission) lockPartitionsInKeyOrder() {
	s := a.s
	order := slices.Clone(a.keys)
	slices.SortFunc(order, domain.CounterKey.Compare)
	var parts []int
	for _, k := range order {
		if p := s.PartitionOf(k); !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	if s.cfg.Fault == CreatesAfterRelock {
		// Its partitions in their own order, as a store with one lock per
		// partition takes them correctly.
		slices.Sort(parts)
	}
	a.held, a.parts = a.held[:0], a.parts[:0]
	for _, p := range parts {
		s.partLocks[p].Lock()
		a.held = append(a.held, &s.partLocks[p])
	}
}

func (a *admission) unlock() {
	for _, p := range a.parts {
		a.s.partLocks[p].Unlock()
	}
	for _, l := range a.held {
		l.Unlock()
	}
	for _, i := range a.stripes {
		<-a.s.stripes[i]
	}
	a.stripes = a.stripes[:0]
}

// read reads every key in caller order. at is the time the caching
// faults look their caches up at; with per-check cleanup it is the
// admission's time, at which expired counters of each check's partition
// are removed first.
func (a *admission) read(at domain.Instant) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cleansPerCheck() {
		for _, k := range s.sweptKeys(a.keys) {
			s.removeExpired(s.PartitionOf(k), at, s.cleanupPerCheck(), a.keys)
		}
	}
	// The partitions' counts are read with the keys: the partition locks of
	// the new keys keep them from growing until the write.
	a.stored = slices.Clone(s.stored)
	if s.cachedBatch(a, at) {
		return
	}
	bySubject := make(map[domain.SubjectKey]int)
	for i, k := range a.keys {
		if s.cfg.Fault == BatchReadsBySubject && !a.single {
			// The defect: the reads are looked up by subject key alone.
			if j, ok := bySubject[k.SubjectKey()]; ok {
				a.before[i], a.present[i], a.versions[i] = a.before[j], a.present[j], a.versions[j]
				continue
			}
			bySubject[k.SubjectKey()] = i
		}
		a.before[i], a.present[i] = s.read(a, k, at)
		a.versions[i] = s.versions[k]
		a.read27(i) // hunt27.go
	}
}

// observe turns the reads into observations at now: each key's counter,
// and for a new key whether its partition has a free slot, claimed in
// caller order.
func (a *admission) observe(now domain.Instant) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.fromMemory {
		return
	}
	claims := make([]int, s.cfg.Partitions)
	for _, i := range a.observeOrder() {
		k := a.keys[i]
		a.claimed[i] = -1
		a.observing = i
		c, ok := a.before[i], a.present[i]
		if ok && s.lapsed(k, c, now) {
			// The backend deleted the key at its deadline: the write
			// creates it again, in the slot it still holds here.
			c = domain.Counter{}
		} else if ok {
			c = s.observedCounter(c, now)
		}
		o := domain.Observation{Counter: c}
		expired := ok && !c.Active(now)
		if ok && s.cfg.Fault == RenewsEarly && now >= c.Expires.Add(-time.Millisecond) {
			o.Counter = domain.Counter{}
		}
		if expired && s.renewalClaimsSlot(a.n) {
			claims[s.PartitionOf(k)]++
		}
		if !ok || (expired && s.cfg.Fault == ExpiredNeedsSlot) {
			o.Counter = domain.Counter{}
			p := s.PartitionOf(k)
			if !ok && a.judgedStored(i) {
				// NewKeysJudgedBeforeLocks: read as stored before the
				// locks, so no slot is claimed for it.
			} else if !ok && s.storesLookalike(k) {
				// The defect: the filter says the key is stored, so its
				// slot is taken without asking whether one is free.
				claims[p]++
				a.claimed[i] = p
			} else if !ok && s.subjectClaimed(a, i, p) {
				// NewKeysClaimBySubject: the subject's claim is taken for
				// this key's too.
				a.claimed[i] = p
			} else if s.full(a, p, s.claimsSeen(a, i, p, claims), now) && !(s.cfg.Fault == ReclaimTakesBatchKeySlot && s.reclaimSlot(a, p, now)) {
				o.Full = true
				retryPart := p
				if s.cfg.Fault == CapacityRetryFirstKeyPartition {
					retryPart = s.PartitionOf(a.keys[0])
				}
				o.EarliestExpiry, o.HasEarliestExpiry = s.retryAt(retryPart, k)
				o.EarliestExpiry = s.retryTime(o.EarliestExpiry, now)
				if at, has, ok := s.retryFault(a, i, retryPart, now); ok {
					o.EarliestExpiry, o.HasEarliestExpiry = at, has
				}
			} else {
				claims[p]++
				a.claimed[i] = p
			}
		}
		a.obs[i] = o
	}
	s.remember(a, now)
}

// storesLookalike reports, for NewKeyBySubjectSeen and NewKeyByHash64Seen,
// whether the store holds a key the fault's filter cannot tell from k. The
// caller holds s.mu.
func (s *Store) storesLookalike(k domain.CounterKey) bool {
	if s.cfg.Fault != NewKeyBySubjectSeen && s.cfg.Fault != NewKeyByHash64Seen {
		return false
	}
	for e := range s.entries {
		switch s.cfg.Fault {
		case NewKeyBySubjectSeen:
			if e.SubjectKey() == k.SubjectKey() {
				return true
			}
		case NewKeyByHash64Seen:
			if e.Hash64() == k.Hash64() {
				return true
			}
		}
	}
	return false
}

// reclaimSlot frees a slot of full partition p for a new key by removing
// its earliest expired counter (ReclaimTakesBatchKeySlot), and reports
// whether it found one. The defect: a key of the admission itself counts
// too, though the admission read it and renews it in place, so the batch
// writes it back beside the new key. The caller holds s.mu.
func (s *Store) reclaimSlot(a *admission, p int, now domain.Instant) bool {
	var victim domain.CounterKey
	var earliest domain.Instant
	found := false
	for k, c := range s.entries {
		if s.PartitionOf(k) == p && !c.Active(now) && (!found || c.Expires < earliest) {
			victim, earliest, found = k, c.Expires, true
		}
	}
	if !found {
		return false
	}
	if !slices.Contains(a.keys, victim) && !s.tryRemove(victim, true) {
		return false
	}
	if slices.Contains(a.keys, victim) {
		// Its lock is the admission's own, so it is removed without one.
		delete(s.entries, victim)
		delete(s.firstExpiry, victim)
		delete(s.versions, victim)
		s.stored[p]--
	}
	a.stored[p]--
	return true
}

// full reports whether partition p has no slot left for one more new key,
// claims[p] having been claimed by earlier checks of the admission. The
// caller holds s.mu.
func (s *Store) full(a *admission, p int, claims []int, now domain.Instant) bool {
	c := s.partitionCapacity()
	switch f := s.cfg.Fault; {
	case f == IgnoresCapacity, f == EvictsLiveKeys,
		f == SingleCheckIgnoresCapacity && a.single,
		f == ShadowIgnoresCapacity && a.mode == domain.Shadow:
		return false
	case f == GlobalBound:
		total := 0
		for q := range a.stored {
			total += a.stored[q] + claims[q]
		}
		return total >= c*s.cfg.Partitions
	case f == OverfillsInBatch:
		return a.stored[p] >= c
	case f == CapacityCountsDistinctSubjects:
		return s.full28(a, p) // hunt28.go
	case f == CapacityPerPolicy:
		return s.policySlots(a, p) >= c // hunt27.go
	case f == CapacityPerProcess:
		// The defect: the process's count, whatever store took the slots.
		return processSlot(p, 0)+claims[p] >= c
	case f == AnyFullPartitionRefuses:
		for q := range a.stored {
			if a.stored[q]+claims[q] >= c {
				return true
			}
		}
		return false
	case f == BatchClaimsShared:
		pending := 0
		for _, n := range claims {
			pending += n
		}
		return a.stored[p]+pending >= c
	case f == BoundCountsActiveOnly:
		active := 0
		for k, e := range s.entries {
			if e.Active(now) && s.PartitionOf(k) == p {
				active++
			}
		}
		return active+claims[p] >= c
	}
	return a.stored[p]+claims[p] >= c
}

// retryAt returns the earliest expiry in partition p (the latest with
// CapacityRetryLatest, the store's earliest with CapacityRetryAnyPartition,
// the earliest first expiry with CapacityRetryFirstWindow, and as
// retryExpiry reads each counter's for a check of refused). The caller
// holds s.mu.
func (s *Store) retryAt(p int, refused domain.CounterKey) (domain.Instant, bool) {
	if s.cfg.Fault == CleanupFiltersHeapInPlace {
		return s.heapTop(p)
	}
	if s.cfg.Fault == CapacityRetrySamplesNewest {
		return s.sampledRetryAt(p)
	}
	var at domain.Instant
	found := false
	for k, e := range s.entries {
		if s.PartitionOf(k) != p && s.cfg.Fault != CapacityRetryAnyPartition {
			continue
		}
		exp, ok := s.retryExpiry(k, refused, e)
		if !ok {
			continue
		}
		better := exp < at
		if s.cfg.Fault == CapacityRetryLatest {
			better = exp > at
		}
		if !found || better {
			at, found = exp, true
		}
	}
	return at, found
}

// evaluationTime returns the time the domain evaluates at: now, except
// where a fault keeps a window running past its end.
func (a *admission) evaluationTime(now domain.Instant) domain.Instant {
	at := now
	for i, o := range a.obs {
		c := o.Counter
		if !a.present[i] || c.Used == 0 {
			continue
		}
		switch {
		case a.s.cfg.Fault == BatchInclusiveEnd && a.n > 1 && now == c.Expires:
			// The defect: the multi-key script compares expires >= now.
			at = min(at, c.Expires-1)
		case a.s.cfg.Fault == RenewsLate && now >= c.Expires && now < c.Expires.Add(time.Millisecond),
			a.s.cfg.Fault == InclusiveEnd && now == c.Expires,
			a.s.ttlSecondActive(c, now): // hunt28.go
			at = min(at, c.Expires-1)
		}
	}
	return at
}

// write persists the new counters of a committed admission. It fails only
// with CancelBetweenWrites, after writing some of them.
func (a *admission) write(now domain.Instant) error {
	s := a.s
	if s.cfg.Fault == ClampsOnlyOnCommit {
		s.raiseClamp(now)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lag29() // hunt29.go
	a.cold = s.cfg.Fault == ScriptRetriedOnColdCache && !s.scriptLoaded
	s.scriptLoaded = true
	targets := a.keys
	if s.cfg.Fault == WritesInLockOrder {
		targets = slices.Clone(a.keys)
		slices.SortFunc(targets, domain.CounterKey.Compare)
	}
	if s.cfg.Fault == WritesThroughInversePermutation {
		targets = inverseTargets(a.keys) // hunt22.go
	}
	for i := range a.n {
		if i > 0 && s.cfg.Fault == CancelBetweenWrites {
			if err := a.ctx.Err(); err != nil {
				// The defect: the keys before i stay written.
				return err
			}
		}
		c, skip := a.stored27(i, a.stored25(i, a.slideBatchRenewal(i, s.encode(a.next(i), a.before[i], a.present[i], now), now), now), now)
		if skip || a.dropsUnprocessed(i) {
			continue // hunt27.go, hunt28.go
		}
		s.put(a, i, targets[i], a.recounted29(i, a.bySubject29(i, c), now))
	}
	return nil
}

// put stores c under k for check i, counting the slot it claimed. The
// caller holds s.mu.
func (s *Store) put(a *admission, i int, k domain.CounterKey, c domain.Counter) {
	if p := a.claimed[i]; p >= 0 && !a.applied {
		if s.cfg.Fault == EvictsLiveKeys && s.stored[p] >= s.cfg.Capacity {
			s.evictFirstExpiring(p, a.keys)
		}
		s.stored[p]++
		if s.cfg.Fault == CapacityPerProcess {
			processSlot(p, 1)
		}
		if !s.insertIndex(k, p) {
			return // TombstonesFillTable: the slot is taken, the key stored nowhere
		}
	}
	if s.cfg.Fault == RenewalTakesSlot && a.present[i] && c.Start >= a.before[i].Expires {
		// The defect: the renewal of an expired counter in its own slot is
		// counted as a slot taken.
		s.stored[s.PartitionOf(k)]++
	}
	_, existed := s.entries[k]
	if !existed {
		s.firstExpiry[k] = c.Expires
		s.inserted++
	}
	s.setDeadline(a, i, k, c)
	s.entries[k] = c
	s.wroteReplica(k, c, !existed)
	if s.cfg.Fault == CleanupFiltersHeapInPlace {
		s.heapWrote(k, s.PartitionOf(k))
	}
	s.versions[k]++
	s.put27(a, i, k, existed) // hunt27.go
	s.wrote28(a, k)           // hunt28.go
	s.wrote29(a, i, k, c)     // hunt29.go
	s.wrote(a, k, c)
	s.bufferWrite(a, i, k, c)
}

// deny applies the faults that write after a denial; a correct store
// writes nothing.
func (a *admission) deny(now domain.Instant) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	idx, outcome := a.denied()
	a.denied27(outcome) // hunt27.go
	a.denied28(idx)     // hunt28.go
	a.denied29(idx)     // hunt29.go
	switch s.cfg.Fault {
	case SingleCheckIgnoresCommit:
		if a.single {
			s.put(a, 0, a.keys[0], a.next(0))
		}
	case NotAtomic:
		for i := range idx {
			s.put(a, i, a.keys[i], a.next(i))
		}
	case WritesOnShadowDenial:
		if outcome != domain.ShadowDenied {
			return
		}
		for i := range idx {
			s.put(a, i, a.keys[i], a.next(i))
		}
		s.charge(a, idx, now)
	case ConsumesOnDenial:
		s.charge(a, idx, now)
	case DenialRollsBackOwnShardOnly:
		s.rollBackOwnShard(a, idx) // hunt26.go
	case KeepsSlotsOfDeniedBatch:
		for _, p := range a.claimed {
			if p >= 0 {
				s.stored[p]++
			}
		}
	case WritesBeforeDeciding:
		// Take back the failing check's write-ahead; the others stay.
		k := a.keys[idx]
		if a.present[idx] {
			s.entries[k] = a.before[idx]
		} else {
			delete(s.entries, k)
			if p := a.claimed[idx]; p >= 0 {
				s.stored[p]--
			}
		}
	}
}

// charge adds check i's cost to its counter though it was denied: up to
// the limit in an active window, or a new window for a key refused for
// capacity. The caller holds s.mu.
func (s *Store) charge(a *admission, i int, now domain.Instant) {
	c, k := a.check(i), a.keys[i]
	old, ok := s.entries[k]
	if ok && old.Active(now) {
		old.Used = min(old.Used+c.Cost(), c.Policy().Limit())
		s.entries[k] = old
		return
	}
	if !ok && a.obs[i].Full {
		s.entries[k] = domain.Counter{Used: c.Cost(), Start: now, Expires: now.Add(c.Policy().Window())}
		s.stored[s.PartitionOf(k)]++
	}
}

// writeAhead adds every check's cost before evaluation, as an INCRBY
// would. The caller does not hold s.mu.
func (a *admission) writeAhead(now domain.Instant) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range a.keys {
		o := a.obs[i]
		if o.Full {
			continue
		}
		c, ch := o.Counter, a.check(i)
		if c.Active(now) {
			c.Used = min(c.Used+ch.Cost(), ch.Policy().Limit())
		} else {
			c = domain.Counter{Used: ch.Cost(), Start: now, Expires: now.Add(ch.Policy().Window())}
		}
		if p := a.claimed[i]; p >= 0 {
			s.stored[p]++
		}
		s.entries[k] = c
	}
	a.applied = true
}
