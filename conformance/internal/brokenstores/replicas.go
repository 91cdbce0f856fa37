package brokenstores

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/runlimit/runlimit/domain"
)

// replicaState is what a replica keeps of its own for the replica faults:
// state that is right as long as the replica is the only one writing, as
// a service's first deployment has one. The shared mu guards it.
type replicaState struct {
	// wrote: ReplicaCachesOwnWrites, the counter this replica last wrote
	// under each key.
	wrote map[domain.CounterKey]domain.Counter
	// created: ReplicaCleansOwnKeys, the keys this replica created.
	created map[domain.CounterKey]bool
}

func newReplicaState() replicaState {
	return replicaState{wrote: make(map[domain.CounterKey]domain.Counter), created: make(map[domain.CounterKey]bool)}
}

// Replica opens a second store over s's data, as a second replica of a
// service opens a second store over one database: the counters, the
// capacity counts, the locks and the clock's floor are shared, and the
// replica has its own of everything else. A replica fault gives it its
// own copy of the one thing it gets wrong.
func (s *Store) Replica() *Store {
	b := *s.backend
	switch s.cfg.Fault {
	case ReplicaCountsOwnSlots:
		// The defect: the replica counts the slots it takes and frees on
		// its own, from the counts it found when it opened.
		s.mu.Lock()
		b.stored = slices.Clone(s.stored)
		s.mu.Unlock()
	case ReplicaLocksInProcess:
		// The defect: the key and partition locks are mutexes in the
		// replica's process, which no other replica takes.
		b.keyMu = new(sync.Mutex)
		b.keyLocks = make(map[domain.CounterKey]*sync.Mutex)
		b.partLocks = make([]sync.Mutex, s.cfg.Partitions)
	case ReplicaClampsOwnClock:
		// The defect: the floor under the replica's clock is the latest
		// time this replica read, not the latest any replica wrote at.
		b.last = new(atomic.Int64)
	}
	return newOver(s.cfg, &b)
}

// cachedWrite returns, for ReplicaCachesOwnWrites, the counter this
// replica last wrote under k while the stored counter is still in the
// window it wrote (same start), and whether it serves one. The caller
// holds s.mu.
func (s *Store) cachedWrite(k domain.CounterKey) (domain.Counter, bool) {
	if s.cfg.Fault != ReplicaCachesOwnWrites {
		return domain.Counter{}, false
	}
	c, ok := s.replica.wrote[k]
	if !ok {
		return domain.Counter{}, false
	}
	// The defect: a replica that wrote the window takes itself for its
	// only writer, and trusts its own count for as long as the window
	// lasts.
	stored, present := s.entries[k]
	if !present || stored.Start != c.Start {
		return domain.Counter{}, false
	}
	return c, true
}

// wroteReplica records a write for the replica faults. The caller holds
// s.mu.
func (s *Store) wroteReplica(k domain.CounterKey, c domain.Counter, created bool) {
	switch s.cfg.Fault {
	case ReplicaCachesOwnWrites:
		s.replica.wrote[k] = c
	case ReplicaCleansOwnKeys:
		if created {
			s.replica.created[k] = true
		}
	}
}

// cleansElsewhere reports, for ReplicaCleansOwnKeys, that this replica's
// cleanup leaves k alone: the defect, a cleanup that walks the keys its
// replica created rather than the shared expiry index. The caller holds
// s.mu.
func (s *Store) cleansElsewhere(k domain.CounterKey) bool {
	return s.cfg.Fault == ReplicaCleansOwnKeys && !s.replica.created[k]
}
