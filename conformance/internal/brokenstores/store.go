package brokenstores

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// Store is a single-partition map-and-mutex store with one optional
// [Fault]. It implements only [ports.Store], so it also shows that a store
// without the optional capabilities passes the suite.
type Store struct {
	fault    Fault
	capacity int
	clock    func() time.Duration

	mu       sync.Mutex
	counters map[domain.CounterKey]domain.Counter
	last     domain.Instant
	admits   int
}

var _ ports.Store = (*Store)(nil)

// New returns an empty store holding at most capacity counters, reading
// time from clock (the time elapsed since the store's epoch), with fault.
func New(fault Fault, capacity int, clock func() time.Duration) *Store {
	return &Store{
		fault:    fault,
		capacity: capacity,
		clock:    clock,
		counters: make(map[domain.CounterKey]domain.Counter),
	}
}

// Admit applies b following the protocol of [domain.Batch], except where
// the store's fault says otherwise.
func (s *Store) Admit(_ context.Context, b *domain.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	keys := s.keysOf(b)
	at := now
	free := s.capacity - len(s.counters)
	for i, k := range keys {
		c, ok := s.counters[k]
		o := domain.Observation{Counter: c}
		switch {
		case ok && s.fault == RenewsEarly && now >= c.Expires.Add(-time.Millisecond):
			o.Counter = domain.Counter{}
		case ok && s.fault == RenewsLate && now >= c.Expires && now < c.Expires.Add(time.Millisecond):
			at = min(at, c.Expires-1)
		case !ok && free > 0:
			free--
		case !ok:
			o.Full = s.fault != IgnoresCapacity && s.fault != EvictsLiveKeys
		}
		b.Observe(i, o)
	}
	if s.fault == NoKeyLocks {
		// The defect: the counters read above are decided on and written
		// back without holding the lock that read them.
		s.mu.Unlock()
		runtime.Gosched()
		s.mu.Lock()
	}
	commit, err := b.Evaluate(at)
	if err != nil {
		return err
	}
	if !commit {
		s.denied(b, keys, now)
		return nil
	}
	for i, k := range keys {
		s.put(k, b.Next(i), keys)
	}
	return nil
}

// now reads the clock, clamped so that it never goes backwards, unless the
// fault is ClockBackwards.
func (s *Store) now() domain.Instant {
	now := domain.InstantOf(s.clock())
	s.admits++
	if s.fault == ClockBackwards {
		if s.admits%2 == 0 {
			now = now.Add(-time.Second)
		}
		return now
	}
	if now < s.last {
		now = s.last
	}
	s.last = now
	return now
}

// keysOf returns the counter key each check reads and writes: its own, or,
// with ReordersAllowances, the key at its position in lock order.
func (s *Store) keysOf(b *domain.Batch) []domain.CounterKey {
	keys := make([]domain.CounterKey, b.Len())
	for i := range keys {
		keys[i] = b.Key(i)
	}
	if s.fault == ReordersAllowances {
		slices.SortFunc(keys, domain.CounterKey.Compare)
	}
	return keys
}

// denied applies the faults that write after a denial; a correct store
// writes nothing.
func (s *Store) denied(b *domain.Batch, keys []domain.CounterKey, now domain.Instant) {
	bd, err := b.Decision()
	if err != nil {
		return
	}
	idx, den, _ := bd.Denied()
	switch s.fault {
	case NotAtomic:
		for i := range idx {
			s.put(keys[i], b.Next(i), keys)
		}
	case ConsumesOnDenial:
		c := b.Check(idx)
		old, ok := s.counters[keys[idx]]
		switch {
		case ok && old.Active(now):
			old.Used = min(old.Used+c.Cost(), c.Policy().Limit())
			s.counters[keys[idx]] = old
		case den.Reason() == domain.StorageCapacity:
			s.counters[keys[idx]] = domain.Counter{Used: c.Cost(), Start: now, Expires: now.Add(c.Policy().Window())}
		}
	}
}

// put stores c under k, evicting first when the fault is EvictsLiveKeys and
// the store is full.
func (s *Store) put(k domain.CounterKey, c domain.Counter, batch []domain.CounterKey) {
	if _, ok := s.counters[k]; !ok && s.fault == EvictsLiveKeys && len(s.counters) >= s.capacity {
		s.evictFirstExpiring(batch)
	}
	s.counters[k] = c
}

func (s *Store) evictFirstExpiring(batch []domain.CounterKey) {
	var victim domain.CounterKey
	found := false
	var earliest domain.Instant
	for k, c := range s.counters {
		if slices.Contains(batch, k) {
			continue
		}
		if !found || c.Expires < earliest {
			victim, earliest, found = k, c.Expires, true
		}
	}
	if found {
		delete(s.counters, victim)
	}
}
