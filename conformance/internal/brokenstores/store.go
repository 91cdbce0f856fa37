package brokenstores

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// Config builds a [Store].
type Config struct {
	// Fault is the store's one defect. Default None.
	Fault Fault
	// Capacity is the most counters each partition holds. Required.
	Capacity int
	// Partitions is the number of capacity partitions. Default 1.
	Partitions int
	// CleanupPerCheck is how many expired counters a check removes from its
	// partition before it reads it, as the memory store does. Default 0:
	// expired counters keep their slots until CleanupExpired, as in
	// PostgreSQL.
	CleanupPerCheck int
	// Clock returns the time elapsed since the store's epoch. Required.
	Clock func() time.Duration
	// OptimisticSingleChecks runs AdmitCheck optimistically, as the memory
	// store's single checks run: read without locks, read the clock, then,
	// under the key's locks, write only if what it read is still there
	// unchanged, and start again otherwise. Default false.
	OptimisticSingleChecks bool
}

// Store is a store with a lock per key, as a database store has row or
// advisory locks: an admission locks its keys in ascending order, then the
// capacity partitions of its new keys in ascending order, then reads its
// clock, reads, decides and writes. A short mutex guards the maps for each
// read or write, but only the key locks keep a key's read and write
// together, so a defect in them shows as lost updates or deadlocks.
//
// It implements every optional capability of package ports; wrap it with
// [Minimal] to show only Admit.
type Store struct {
	cfg        Config
	created    time.Time // for IgnoresInjectedClock
	closed     atomic.Bool
	clockReads atomic.Int64 // for ClockBackwards

	// backend is the data and the locks every replica of the store shares
	// (see Replica).
	*backend
	// replica is the state a replica keeps of its own, which only the
	// replica faults consult (replicas.go).
	replica replicaState

	singleMu sync.Mutex      // SingleCheckOwnLock's lock for AdmitCheck
	clockMu  sync.Mutex      // CleanupHoldsClockLock's store-wide clock lock
	stripes  []chan struct{} // StripeLockedTwice's locks, instead of the keys'

	// inserted counts the counters ever inserted (StatsEntriesNeverShrink).
	inserted int
	// sharedBefore and sharedPresent are SingleCheckSharedReads's one read
	// buffer for every AdmitCheck.
	sharedBefore  []domain.Counter
	sharedPresent []bool
	caches
	lifetimes
	reused
	index
	results
	lifecycle
	hunt25
	hunt26
	hunt27
	chunkWaits
	hunt28
	hunt29
}

var (
	_ ports.Store         = (*Store)(nil)
	_ ports.CheckAdmitter = (*Store)(nil)
	_ ports.Cleaner       = (*Store)(nil)
	_ ports.StatsReporter = (*Store)(nil)
	_ ports.Closer        = (*Store)(nil)

	_ ports.ReadinessChecker = (*Store)(nil)
)

// backend is what a database holds for every replica: the counters, the
// capacity counts, the locks and the clock's floor. Its fields are all
// references, so that a replica fault can give a replica its own copy of
// one of them (see Replica).
type backend struct {
	last *atomic.Int64 // the latest time read, as a domain.Instant

	keyMu     *sync.Mutex
	keyLocks  map[domain.CounterKey]*sync.Mutex
	partLocks []sync.Mutex

	mu      *sync.Mutex // guards the maps and counts, and each Store's own state, for one read or one write
	entries map[domain.CounterKey]domain.Counter
	stored  []int // counters held by each partition, expired ones included
	// firstExpiry is the expiry each stored key had when it was stored
	// (CapacityRetryFirstWindow).
	firstExpiry map[domain.CounterKey]domain.Instant
	// versions counts the writes of each stored counter since it was
	// created, 1 for its first (OptimisticVersionRestarts).
	versions map[domain.CounterKey]uint64
}

func newBackend(partitions int) *backend {
	return &backend{
		last:        new(atomic.Int64),
		keyMu:       new(sync.Mutex),
		keyLocks:    make(map[domain.CounterKey]*sync.Mutex),
		partLocks:   make([]sync.Mutex, partitions),
		mu:          new(sync.Mutex),
		entries:     make(map[domain.CounterKey]domain.Counter),
		stored:      make([]int, partitions),
		firstExpiry: make(map[domain.CounterKey]domain.Instant),
		versions:    make(map[domain.CounterKey]uint64),
	}
}

// New returns an empty store.
func New(cfg Config) *Store {
	if cfg.Partitions < 1 {
		cfg.Partitions = 1
	}
	return newOver(cfg, newBackend(cfg.Partitions))
}

// newOver returns a store over the backend b.
func newOver(cfg Config, b *backend) *Store {
	s := &Store{
		cfg:       cfg,
		created:   time.Now(),
		backend:   b,
		replica:   newReplicaState(),
		caches:    newCaches(),
		lifetimes: newLifetimes(cfg.Partitions),
		index:     newIndex(cfg.Partitions),
		hunt27:    newHunt27(),

		sharedBefore:  make([]domain.Counter, 1),
		sharedPresent: make([]bool, 1),
	}
	if cfg.Fault == StripeLockedTwice {
		s.stripes = make([]chan struct{}, stripeCount)
		for i := range s.stripes {
			s.stripes[i] = make(chan struct{}, 1)
		}
	}
	return s
}

// Minimal returns s as a plain [ports.Store], hiding every optional
// capability, to show that a store without them passes the suite.
func Minimal(s ports.Store) ports.Store { return minimal{s} }

type minimal struct{ s ports.Store }

func (m minimal) Admit(ctx context.Context, b *domain.Batch) error { return m.s.Admit(ctx, b) }

// PartitionOf returns the capacity partition of k: the first byte of its
// fingerprint XOR the first byte of its subject key, modulo the partition
// count (PostgreSQL's ledger shard, folded).
func (s *Store) PartitionOf(k domain.CounterKey) int {
	b := k.Bytes()
	return int(b[0]^b[32]) % s.cfg.Partitions
}

// Admit applies b following the protocol of [domain.Batch], except where
// the store's fault says otherwise.
func (s *Store) Admit(ctx context.Context, b *domain.Batch) error {
	if s.cfg.Fault == NilContextBeforeBatchReady && ctx == nil {
		return &Error{Op: "admit", Err: ports.ErrNilContext}
	}
	if s.cfg.Fault == DoneContextBeforeBatchReady && ctx != nil && ctx.Err() != nil {
		return &Error{Op: "admit", Err: ctx.Err()}
	}
	if s.cfg.Fault == ClosedBeforeBatchReady && s.closed.Load() {
		return &Error{Op: "admit", Err: ports.ErrClosed}
	}
	if s.cfg.Fault != SkipsBatchReady {
		if err := b.Ready(); err != nil {
			return err
		}
	}
	ctx = s.context26(ctx, false) // hunt26.go
	if err := s.usable(ctx, b.Key(0)); err != nil {
		return err
	}
	if s.cfg.Fault == BatchStepsPerKeyWithRefund && b.Len() > 1 {
		return s.admitPerKey(ctx, b)
	}
	if s.cfg.Fault == BatchCappedAtCapacity && b.Len() > s.cfg.Capacity {
		// The defect: one partition's bound taken for the batch's.
		return &Error{Op: "admit", Err: &domain.BatchError{Problem: domain.BatchTooLarge, Size: b.Len(), Max: s.cfg.Capacity}}
	}
	a := &admission{s: s, ctx: ctx, n: b.Len(), mode: b.Mode(), check: b.Check}
	a.keys = make([]domain.CounterKey, a.n)
	for i := range a.keys {
		a.keys[i] = s.storageKey(b.Check(i))
	}
	if s.cfg.Fault == ReordersAllowances {
		slices.SortFunc(a.keys, domain.CounterKey.Compare)
	}
	a.evaluate = func(now domain.Instant) (bool, error) {
		for i := range a.n {
			b.Observe(i, a.obs[i])
		}
		return b.Evaluate(now)
	}
	a.next = b.Next
	a.denied = func() (int, domain.Outcome) {
		bd, err := b.Decision()
		if err != nil {
			return 0, domain.Denied
		}
		i, _, _ := bd.Denied()
		return i, bd.Outcome()
	}
	if s.answersApart() {
		a.decideApartBatch(b) // hunt24.go
	}
	if err := a.run(); err != nil {
		return err
	}
	if err := a.answerLater(); err != nil {
		return &Error{Op: "admit", Err: err}
	}
	return nil
}

// admitCheck applies one check as Admit applies a batch of one, through
// [domain.EvaluateCheck].
func (s *Store) admitCheck(ctx context.Context, c domain.Check) (domain.Decision, error) {
	if s.cfg.Fault == ClosedBeforeCheckValidation && ctx != nil && s.closed.Load() {
		return domain.Decision{}, &Error{Op: "admit", Err: ports.ErrClosed}
	}
	if err := c.Validate(); err != nil {
		if s.cfg.Fault == SingleCheckSkipsValidation {
			return domain.Decision{}, nil
		}
		return domain.Decision{}, err
	}
	ctx = s.context26(ctx, true) // hunt26.go
	if err := s.usableSingle(ctx, c.CounterKey()); err != nil {
		return domain.Decision{}, err
	}
	var (
		next domain.Counter
		d    domain.Decision
	)
	a := &admission{s: s, ctx: ctx, n: 1, single: true, mode: c.Policy().Mode(), check: func(int) domain.Check { return c }}
	a.keys = []domain.CounterKey{s.storageKey(c)}
	a.evaluate = func(now domain.Instant) (bool, error) {
		return domain.EvaluateCheck(&c, now, &a.obs[0], &next, &d)
	}
	a.next = func(int) domain.Counter { return next }
	a.denied = func() (int, domain.Outcome) { return 0, d.Outcome() }
	if s.answersApart() {
		a.decideApartCheck(&c, &d) // hunt24.go
	}
	if s.cachedDenial29(&c, &d) {
		return d, nil // hunt29.go
	}
	if err := a.runAnswering(); err != nil {
		if errors.Is(err, errAnsweredNothing) {
			return domain.Decision{}, nil // hunt21.go
		}
		return s.decisionBesideError(d), err
	}
	if err := a.answerLater(); err != nil {
		return domain.Decision{}, &Error{Op: "admit", Err: err}
	}
	s.noteDenial29(&c, a.obs[0], d) // hunt29.go
	return d, nil
}

// storageKey returns the key the store keeps c's counter under: its
// counter key, or what a keying fault makes of it.
func (s *Store) storageKey(c domain.Check) domain.CounterKey {
	if k, ok := s.hunt26Key(c); ok {
		return k // hunt26.go
	}
	if k, ok := s.hunt27Key(c); ok {
		return k // hunt27.go
	}
	k := c.CounterKey()
	switch s.cfg.Fault {
	case KeysBySubjectOnly:
		return domain.NewCounterKey(domain.Fingerprint{}, k.SubjectKey())
	case KeysByPolicyID:
		p := c.Policy()
		return domain.NewCounterKey(sha256.Sum256([]byte(p.ID().String()+"\x00"+p.Scope().String())), k.SubjectKey())
	case KeysWithoutScopePerPartition:
		// The partition's own map, keyed without the scope: a fingerprint
		// of the rest, whose first byte keeps the key in its partition.
		p := c.Policy()
		rest := binary.BigEndian.AppendUint64(append([]byte(p.ID().String()), 0), uint64(p.Limit()))
		fp := sha256.Sum256(binary.BigEndian.AppendUint64(rest, uint64(p.Window().Milliseconds())))
		sk := k.SubjectKey().Bytes()
		fp[0] = byte(s.PartitionOf(k)) ^ sk[0]
		return domain.NewCounterKey(fp, k.SubjectKey())
	case KeysByHash64, KeysBySubjectSuffix, KeysXorFolded, KeysByFingerprintXorSubject, KeysByFingerprintFirstByte:
		return s.reducedKey(k)
	case KeysDropControlBytes, KeysFoldBase64Case:
		return s.textKey(k)
	case KeysByInt32Limit, KeysByFloatLimit, KeysByInt32WindowMillis, KeysByJoinedText, KeysByUnseparatedFields,
		KeysByFingerprintPrefix, KeysByFingerprintSuffix:
		return s.joinedKey(c)
	case KeysCutAtNulByte, KeysCutTo50Bytes, KeysFoldRawCase, KeysAsJSONStrings:
		return hunt25Key(s.cfg.Fault, k)
	case ShadowSeparateCounter:
		if c.Policy().Mode() == domain.Shadow {
			fp := k.Fingerprint()
			return domain.NewCounterKey(sha256.Sum256(append(fp[:], "shadow"...)), k.SubjectKey())
		}
	}
	return k
}

// reducedKey is the key a key-reducing fault keeps k's counter under. Its
// first bytes of fingerprint and subject key keep k's partition.
func (s *Store) reducedKey(k domain.CounterKey) domain.CounterKey {
	b := k.Bytes()
	var fp domain.Fingerprint
	var sub [32]byte
	switch s.cfg.Fault {
	case KeysByHash64:
		binary.LittleEndian.PutUint64(sub[:], k.Hash64())
	case KeysBySubjectSuffix:
		copy(fp[:], b[:32])
		sub[0] = b[32]
		copy(sub[16:], b[48:])
	case KeysXorFolded:
		var x uint64
		for i := 0; i < len(b); i += 8 {
			x ^= binary.LittleEndian.Uint64(b[i:])
		}
		binary.LittleEndian.PutUint64(sub[:], x)
	case KeysByFingerprintXorSubject:
		for i := range sub {
			sub[i] = b[i] ^ b[32+i]
		}
	case KeysByFingerprintFirstByte:
		fp[0] = b[0]
		copy(sub[:], b[32:])
	}
	// The partition is the first byte of the fingerprint XOR that of the
	// subject key: keep k's.
	fp[0] = b[0] ^ b[32] ^ sub[0]
	return domain.NewCounterKey(fp, domain.SubjectKeyFromBytes(sub))
}

// now reads the clock, clamped so that it never goes backwards, unless the
// fault is ClockBackwards. With CleanupHoldsClockLock and
// ClockMutexBeforeLocks it reads it under the store-wide clock lock.
func (s *Store) now() domain.Instant {
	if s.clockUnderStoreMutex() {
		s.clockMu.Lock()
		defer s.clockMu.Unlock()
	}
	return s.clampedNow()
}

// clampedNow is now without the clock lock.
func (s *Store) clampedNow() domain.Instant {
	if s.cfg.Fault == ClampRacyReadModifyWrite {
		return s.racyClamp() // hunt21.go
	}
	var now domain.Instant
	if s.cfg.Fault == IgnoresInjectedClock {
		now = domain.InstantOf(time.Since(s.created))
	} else if s.cfg.Fault == ClockJoinsSecondsAndMicros {
		now = joinedClock(s.cfg.Clock())
	} else {
		now = domain.InstantOf(s.cfg.Clock())
	}
	if now, ok := s.edgeClamp(now); ok {
		return now
	}
	if s.cfg.Fault == TrustsInjectedClock {
		// The defect: no clamp, so a clock that steps back moves the
		// store's time back with it.
		return now
	}
	switch s.cfg.Fault {
	case ClampsOnlyOnCommit:
		// The defect: the time read is clamped, but raises the clamp only
		// when the admission writes (see admission.write).
		return max(now, domain.Instant(s.last.Load()))
	case ClampKeepsRawTime:
		// The defect: the clock's own reading is kept as the latest.
		return max(now, domain.Instant(s.last.Swap(int64(now))))
	}
	if s.cfg.Fault == ClockBackwards {
		if s.clockReads.Add(1)%2 == 0 {
			now = now.Add(-time.Second)
		}
		return now
	}
	for {
		last := s.last.Load()
		if int64(now) <= last {
			return domain.Instant(last)
		}
		if s.last.CompareAndSwap(last, int64(now)) {
			return now
		}
	}
}
