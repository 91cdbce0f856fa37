package casstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// ErrCapacity is returned by [New] for a capacity below one. It matches
// [ports.ErrInvalidConfig], as every store's configuration error does.
var ErrCapacity = fmt.Errorf("%w: casstore capacity must be at least 1", ports.ErrInvalidConfig)

// Config configures a [Store].
type Config struct {
	// Capacity is the most counters the store holds: a new key beyond it is
	// denied for storage capacity, and no active counter is ever evicted.
	// Required, at least 1.
	Capacity int
	// MaxBatchSize is the largest batch Admit accepts. Default 32
	// ([domain.DefaultMaxBatchSize]).
	MaxBatchSize int
	// Clock returns the time elapsed since the store's epoch. Tests inject a
	// fake clock here; the store clamps it so time never goes backwards.
	// Default: a monotonic clock started by New.
	Clock func() time.Duration
}

// Store is a bounded store that admits optimistically: it reads, decides
// and writes only if nothing it read has changed, and starts again when
// something has. It is safe for concurrent use.
type Store struct {
	capacity  int64
	maxBatch  int
	clock     func() time.Duration
	conflicts atomic.Int64
	table     *table
}

var (
	_ ports.Store         = (*Store)(nil)
	_ ports.CheckAdmitter = (*Store)(nil)
	_ ports.Cleaner       = (*Store)(nil)
	_ ports.StatsReporter = (*Store)(nil)
)

// New returns an empty store.
func New(cfg Config) (*Store, error) {
	if cfg.Capacity < 1 {
		return nil, ErrCapacity
	}
	if cfg.MaxBatchSize < 1 {
		cfg.MaxBatchSize = domain.DefaultMaxBatchSize
	}
	if cfg.Clock == nil {
		start := time.Now()
		cfg.Clock = func() time.Duration { return time.Since(start) }
	}
	return &Store{capacity: int64(cfg.Capacity), maxBatch: cfg.MaxBatchSize, clock: cfg.Clock, table: newTable()}, nil
}

// Admit applies b atomically. Each attempt reads every key and the
// occupancy in one consistent read, evaluates a scratch copy of b at the
// store's clock, and commits the new counters only if nothing it read has
// changed; a conflict starts a new attempt. The attempt that commits (or
// whose denial is confirmed unchanged) is then replayed on b itself, which
// the domain lets a store evaluate only once.
func (s *Store) Admit(ctx context.Context, b *domain.Batch) error {
	if err := b.Ready(); err != nil {
		return err
	}
	if ctx == nil {
		return ports.ErrNilContext
	}
	n := b.Len()
	if n > s.maxBatch {
		return &domain.BatchError{Problem: domain.BatchTooLarge, Size: n, Max: s.maxBatch}
	}
	checks := make([]domain.Check, n)
	keys := make([]domain.CounterKey, n)
	for i := range n {
		checks[i], keys[i] = b.Check(i), b.Key(i)
	}
	obs, now, err := s.admit(ctx, keys, func(obs []domain.Observation, now domain.Instant) (bool, func(int) domain.Counter, error) {
		scratch, err := domain.NewBatch(checks, n)
		if err != nil {
			return false, nil, err
		}
		for i, o := range obs {
			scratch.Observe(i, o)
		}
		commit, err := scratch.Evaluate(now)
		return commit, scratch.Next, err
	})
	if err != nil {
		return err
	}
	for i, o := range obs {
		b.Observe(i, o)
	}
	if _, err := b.Evaluate(now); err != nil {
		return &AdmitError{Err: err}
	}
	return nil
}

// AdmitCheck applies one check as Admit applies a batch of one, through
// [domain.EvaluateCheck], which a store may call once per attempt.
func (s *Store) AdmitCheck(ctx context.Context, c domain.Check) (domain.Decision, error) {
	if err := c.Validate(); err != nil {
		return domain.Decision{}, err
	}
	if ctx == nil {
		return domain.Decision{}, ports.ErrNilContext
	}
	var (
		next domain.Counter
		d    domain.Decision
	)
	_, _, err := s.admit(ctx, []domain.CounterKey{c.CounterKey()}, func(obs []domain.Observation, now domain.Instant) (bool, func(int) domain.Counter, error) {
		commit, err := domain.EvaluateCheck(&c, now, &obs[0], &next, &d)
		return commit, func(int) domain.Counter { return next }, err
	})
	if err != nil {
		return domain.Decision{}, err
	}
	return d, nil
}

// evaluateFunc decides one attempt from its observations at now: whether
// to commit, and the counter to write for each key when it does.
type evaluateFunc func(obs []domain.Observation, now domain.Instant) (commit bool, next func(i int) domain.Counter, err error)

// admit is the optimistic protocol, written once for both paths:
//
//  1. read every key and the occupancy in one consistent read, without
//     locking anything;
//  2. observe each key (a new key needs a free slot, claimed in caller
//     order), read the store's clock, and evaluate;
//  3. write the new counters (and the occupancy, when new keys join) only
//     if every entry read, and the occupancy when it matters, still has the
//     version read; a denial writes nothing, but is confirmed the same way,
//     so that it was true of one state of the store;
//  4. on a conflict, start again from 1.
//
// It returns the observations and time of the attempt that stood.
func (s *Store) admit(ctx context.Context, keys []domain.CounterKey, evaluate evaluateFunc) ([]domain.Observation, domain.Instant, error) {
	var snap snapshot
	obs := make([]domain.Observation, len(keys))
	changes := make([]change, 0, len(keys))
	for {
		// Nothing is written before the commit, and the commit is atomic:
		// a cancelled context consumed nothing.
		if err := ctx.Err(); err != nil {
			return nil, 0, &AdmitError{Err: err}
		}
		s.table.read(keys, &snap)
		claimed := s.observe(&snap, obs)
		// The clock is read after the state it judges, so a window is never
		// anchored before a counter this attempt read.
		now := s.now()
		commit, next, err := evaluate(obs, now)
		if err != nil {
			return nil, 0, &AdmitError{Err: err}
		}
		changes = changes[:0]
		slots := snap.slots.n
		if commit {
			for i, k := range keys {
				changes = append(changes, change{key: k, counter: next(i)})
			}
			slots += claimed
		}
		// The occupancy matters when new keys join, and when a denial may
		// rest on a full store that cleanup has since emptied.
		withSlots := claimed > 0 || !commit
		if s.table.commit(&snap, withSlots, slots, changes) {
			return obs, now, nil
		}
		s.conflicts.Add(1)
	}
}

// observe fills obs from snap: each key's counter, and whether a new key
// finds a free slot, claimed in caller order. It returns the slots claimed.
func (s *Store) observe(snap *snapshot, obs []domain.Observation) int64 {
	free := s.capacity - snap.slots.n
	var claimed int64
	for i, c := range snap.cells {
		o := domain.Observation{Counter: c.counter}
		if c.version == 0 {
			// A stored key, expired or not, renews in its own slot; a new one
			// needs a free slot.
			if claimed < free {
				claimed++
			} else {
				o.Full = true
			}
		}
		obs[i] = o
	}
	return claimed
}

// CleanupExpired removes at most max expired counters and returns how many
// it removed; it frees their slots in the same conditional write. Active
// counters are never removed: a counter renewed since it was read makes
// the write conflict, and cleanup reads again. It checks its call in the
// order [ports.Cleaner] documents: a negative max returns
// [ports.ErrNegativeMax], a nil ctx [ports.ErrNilContext], a max of 0
// (0, nil), and a done ctx its error, each removing nothing.
func (s *Store) CleanupExpired(ctx context.Context, max int) (int, error) {
	switch {
	case max < 0:
		return 0, ports.ErrNegativeMax
	case ctx == nil:
		return 0, ports.ErrNilContext
	case max == 0:
		return 0, nil
	}
	var snap snapshot
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		s.table.expired(s.now(), max, &snap)
		if len(snap.cells) == 0 {
			return 0, nil
		}
		changes := make([]change, len(snap.cells))
		for i, c := range snap.cells {
			changes[i] = change{key: c.key, remove: true}
		}
		if s.table.commit(&snap, true, snap.slots.n-int64(len(changes)), changes) {
			return len(changes), nil
		}
		s.conflicts.Add(1)
	}
}

// Stats reports the store's occupancy: one capacity partition.
func (s *Store) Stats(context.Context) (ports.Stats, error) {
	n := s.table.stored()
	return ports.Stats{Entries: n, Capacity: s.capacity, Shards: 1, Headroom: []int64{s.capacity - n}}, nil
}

// Replica returns another Store over s's rows, as a second replica of a
// service opens a store over the backend the first one uses: the same
// counters, occupancy and clock floor, and its own conflict count. Each
// keeps every guarantee with the other as with itself.
func (s *Store) Replica() *Store {
	return &Store{capacity: s.capacity, maxBatch: s.maxBatch, clock: s.clock, table: s.table}
}

// Conflicts returns how many attempts, of admissions and cleanups, found
// that something they read had changed and started again. A hot key shows
// here first; a high rate says the workload wants a locking store.
func (s *Store) Conflicts() int64 { return s.conflicts.Load() }

// now reads the clock, clamped so that it never goes backwards: a window
// must never start before one anchored earlier. The floor is the table's,
// shared by every replica, as a backend's own clock (Redis TIME, a
// database's clock) is: a floor of this Store's own would let a replica
// whose clock is behind decide at a time before one another replica
// already judged.
func (s *Store) now() domain.Instant {
	return s.table.floor(domain.InstantOf(s.clock()))
}
