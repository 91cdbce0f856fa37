package mapstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// ErrCapacity is returned by [New] for a capacity below one. It matches
// [ports.ErrInvalidConfig], as every store's configuration error does.
var ErrCapacity = fmt.Errorf("%w: mapstore capacity must be at least 1", ports.ErrInvalidConfig)

// Config configures a [Store].
type Config struct {
	// Capacity is the most counters the store holds: a new key beyond it is
	// denied for storage capacity, and no active counter is ever evicted.
	// Required, at least 1.
	Capacity int
	// Clock returns the time elapsed since the store's epoch. Tests inject a
	// fake clock here; the store clamps it so time never goes backwards.
	// Default: a monotonic clock started by New.
	Clock func() time.Duration
}

// Store is a bounded, process-local store: a map of counters guarded by one
// mutex. It is safe for concurrent use.
type Store struct {
	capacity int
	clock    func() time.Duration

	mu       sync.Mutex
	counters map[domain.CounterKey]domain.Counter
	last     domain.Instant // the latest time read, so the clock never runs backwards
}

var (
	_ ports.Store   = (*Store)(nil)
	_ ports.Cleaner = (*Store)(nil)
)

// New returns an empty store.
func New(cfg Config) (*Store, error) {
	if cfg.Capacity < 1 {
		return nil, ErrCapacity
	}
	if cfg.Clock == nil {
		start := time.Now()
		cfg.Clock = func() time.Duration { return time.Since(start) }
	}
	return &Store{
		capacity: cfg.Capacity,
		clock:    cfg.Clock,
		counters: make(map[domain.CounterKey]domain.Counter, cfg.Capacity),
	}, nil
}

// Admit applies b atomically, following the protocol of [domain.Batch].
func (s *Store) Admit(ctx context.Context, b *domain.Batch) error {
	// A caller's mistake (a nil batch, one never prepared) is reported
	// first, whatever state the store or ctx is in, and before any work.
	if err := b.Ready(); err != nil {
		if errors.Is(err, domain.ErrInvalidInput) {
			return err
		}
		return &AdmitError{Err: err} // a batch some store already drove
	}
	if ctx == nil {
		return ports.ErrNilContext
	}
	if err := ctx.Err(); err != nil {
		return &AdmitError{Err: err}
	}
	// One lock covers every key of every batch: the whole batch is read,
	// decided and written while no other batch can see it half done.
	s.mu.Lock()
	defer s.mu.Unlock()
	free := s.capacity - len(s.counters)
	for i := range b.Len() {
		c, ok := s.counters[b.Key(i)]
		o := domain.Observation{Counter: c}
		if !ok {
			// Each new key of the batch needs a slot of its own. A stored
			// key, even expired, renews in its own slot and needs none.
			o.Full = free <= 0
			free--
		}
		b.Observe(i, o)
	}
	commit, err := b.Evaluate(s.now())
	if err != nil {
		return &AdmitError{Err: err}
	}
	if commit {
		for i := range b.Len() {
			s.counters[b.Key(i)] = b.Next(i)
		}
	}
	return nil
}

// CleanupExpired removes at most max expired counters and returns how many
// it removed. Active counters are never removed. It checks its call in the
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
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	removed := 0
	for k, c := range s.counters {
		if removed >= max {
			break
		}
		if !c.Active(now) {
			delete(s.counters, k)
			removed++
		}
	}
	return removed, nil
}

// now reads the clock under s.mu, clamped so that it never goes backwards:
// a window must never start before one anchored earlier.
func (s *Store) now() domain.Instant {
	now := domain.InstantOf(s.clock())
	if now < s.last {
		now = s.last
	}
	s.last = now
	return now
}
