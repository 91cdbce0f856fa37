package brokenstores

import (
	"slices"

	"github.com/runlimit/runlimit/domain"
)

// caches hold the stale state of the caching faults. The store's mu guards
// them.
type caches struct {
	// reads: CachesReads, what each key read at an instant.
	reads map[domain.CounterKey]cachedRead
	// batches: CachesBatches, what each set of keys observed at an instant.
	batches map[string]cachedBatch
	// single: SingleCheckCache, AdmitCheck's own copy of the counters it
	// read or wrote.
	single map[domain.CounterKey]domain.Counter
	// kept: CleanupKeepsReadCache, the counters reads found, until a write
	// of the key (but not cleanup's delete) drops them.
	kept map[domain.CounterKey]domain.Counter
}

type cachedRead struct {
	at      domain.Instant
	counter domain.Counter
	ok      bool
}

type cachedBatch struct {
	at  domain.Instant
	obs []domain.Observation
}

func newCaches() caches {
	return caches{
		reads:   make(map[domain.CounterKey]cachedRead),
		batches: make(map[string]cachedBatch),
		single:  make(map[domain.CounterKey]domain.Counter),
		kept:    make(map[domain.CounterKey]domain.Counter),
	}
}

// read returns the counter stored under k, or the stale one a caching
// fault serves instead. The caller holds s.mu.
func (s *Store) read(a *admission, k domain.CounterKey, at domain.Instant) (domain.Counter, bool) {
	if !s.indexed(k) {
		return domain.Counter{}, false
	}
	if c, ok := s.cachedWrite(k); ok {
		return c, true
	}
	switch {
	case s.cfg.Fault == CachesReads:
		if r, ok := s.reads[k]; ok && r.at == at {
			return r.counter, r.ok
		}
	case s.cfg.Fault == SingleCheckCache && a.single:
		if c, ok := s.single[k]; ok {
			return c, true
		}
	case s.cfg.Fault == CleanupKeepsReadCache:
		if c, ok := s.kept[k]; ok {
			return c, true
		}
		c, ok := s.entries[k]
		if ok {
			s.kept[k] = c
		}
		return c, ok
	}
	c, ok := s.entries[k]
	return c, ok
}

// wrote records a write in the caches that see writes: AdmitCheck's own
// copy sees only AdmitCheck's. The caller holds s.mu.
func (s *Store) wrote(a *admission, k domain.CounterKey, c domain.Counter) {
	if s.cfg.Fault == SingleCheckCache && a.single {
		s.single[k] = c
	}
	// The defect of CleanupKeepsReadCache: a write drops the key's cached
	// read, but nothing else does.
	delete(s.kept, k)
}

// batchKey names a set of keys, in any order.
func batchKey(keys []domain.CounterKey) string {
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, domain.CounterKey.Compare)
	var b []byte
	for _, k := range sorted {
		kb := k.Bytes()
		b = append(b, kb[:]...)
	}
	return string(b)
}

// cachedBatch serves a batch of several keys that already ran at at from
// what it observed then, and reports whether it did. The caller holds
// s.mu.
func (s *Store) cachedBatch(a *admission, at domain.Instant) bool {
	if s.cfg.Fault != CachesBatches || a.n < 2 {
		return false
	}
	m, ok := s.batches[batchKey(a.keys)]
	if !ok || m.at != at {
		return false
	}
	copy(a.obs, m.obs)
	for i := range a.claimed {
		a.claimed[i] = -1
		a.before[i], a.present[i] = m.obs[i].Counter, m.obs[i].Counter.Present()
	}
	a.fromMemory = true
	return true
}

// remember records what an admission read at now, for the caching faults.
// The caller holds s.mu.
func (s *Store) remember(a *admission, now domain.Instant) {
	switch {
	case s.cfg.Fault == CachesBatches && a.n > 1:
		s.batches[batchKey(a.keys)] = cachedBatch{at: now, obs: slices.Clone(a.obs)}
	case s.cfg.Fault == CachesReads:
		for i, k := range a.keys {
			s.reads[k] = cachedRead{at: now, counter: a.before[i], ok: a.present[i]}
		}
	}
}
