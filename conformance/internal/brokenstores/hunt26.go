package brokenstores

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// This file holds the faults of the twenty-sixth blind hunt: an adapter
// author porting the store to a Redis script per check, a SQL store that
// retries on serialization failures, a store sharded over several
// backends with a two-phase commit, a store that saves clock round trips,
// a ledger whose queries report Stats, or a store that keeps scratch
// buffers, who wrote it without reading the suite (see fault.go).

// hunt26 is the state of this hunt's faults.
type hunt26 struct {
	// sharedObs is SharedObservationBuffer's one observation buffer for
	// every admission; the store's mu guards each access.
	sharedObs []domain.Observation
	// clockCalls counts ClockRefreshedEveryFourth's admissions.
	clockCalls atomic.Int64
}

// optimistic26 reports whether every admission runs optimistically.
func (s *Store) optimistic26() bool {
	return s.cfg.Fault == RetryKeepsFirstClock || s.cfg.Fault == ConflictRetryReappliesWrite
}

// hunt26Key is the key a keying fault of this hunt keeps c's counter
// under, and whether one applies. Its first byte keeps c's partition.
func (s *Store) hunt26Key(c domain.Check) (domain.CounterKey, bool) {
	k, p, id, scope, limit, windowMillis := policyFields(c)
	var fp domain.Fingerprint
	switch s.cfg.Fault {
	case KeysByWindowSeconds:
		fp = fieldsKey(id, scope, limit, int64(p.Window()/time.Second))
	case KeysWithoutLimit:
		fp = fieldsKey(id, scope, 0, windowMillis)
	case KeysWithoutWindow:
		fp = fieldsKey(id, scope, limit, 0)
	default:
		return k, false
	}
	sk := k.SubjectKey().Bytes()
	fp[0] = byte(s.PartitionOf(k)) ^ sk[0]
	return domain.NewCounterKey(fp, k.SubjectKey()), true
}

// context26 returns the context an admission goes on with: ctx, or for a
// fault that does not see that ctx is done, one that is never done.
func (s *Store) context26(ctx context.Context, single bool) context.Context {
	if ctx == nil || ctx.Err() == nil {
		return ctx
	}
	ignore := false
	switch s.cfg.Fault {
	case DoneContextDeadlineOnly:
		ignore = !errors.Is(ctx.Err(), context.DeadlineExceeded)
	case DoneContextCanceledOnly:
		ignore = errors.Is(ctx.Err(), context.DeadlineExceeded)
	case SingleCheckIgnoresDoneContext:
		ignore = single
	}
	if ignore {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// usableSingle is usable for AdmitCheck: with SingleCheckIgnoresClose a
// closed store is not looked at.
func (s *Store) usableSingle(ctx context.Context, k domain.CounterKey) error {
	if s.cfg.Fault != SingleCheckIgnoresClose || !s.closed.Load() {
		return s.usable(ctx, k)
	}
	if err := s.nilContext("admit", ctx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &Error{Op: "admit", Err: err}
	}
	return nil
}

// stats26 is st as this hunt's Stats faults report it. The caller holds
// s.mu.
func (s *Store) stats26(st ports.Stats) ports.Stats {
	switch s.cfg.Fault {
	case StatsCapacityPerPartition:
		st.Capacity = int64(s.partitionCapacity())
	case StatsHeadroomSortedByFill:
		slices.SortFunc(st.Headroom, func(a, b int64) int { return int(b - a) })
	case StatsHeadroomExcludesExpired:
		now := s.clampedNow()
		for k, c := range s.entries {
			if p := s.PartitionOf(k); !c.Active(now) && p < len(st.Headroom) {
				st.Headroom[p]++
			}
		}
	case StatsShardsNonEmpty:
		n := 0
		for _, h := range st.Headroom {
			if h < int64(s.partitionCapacity()) {
				n++
			}
		}
		st.Shards = n
	}
	return st
}

// shareObservations keeps a's reads in the store's one observation
// buffer (SharedObservationBuffer) from the moment they are read: the
// buffer is filled before the clock read and read back after it, for the
// evaluation.
func (a *admission) shareObservations(filled bool) {
	s := a.s
	if s.cfg.Fault != SharedObservationBuffer {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !filled {
		if len(s.sharedObs) < a.n {
			s.sharedObs = make([]domain.Observation, a.n)
		}
		for i := range a.n {
			s.sharedObs[i] = domain.Observation{Counter: a.before[i], Full: !a.present[i]}
		}
		return
	}
	// The defect: what another admission read since replaces a's reads.
	for i := range a.n {
		o := s.sharedObs[i]
		a.before[i], a.present[i] = o.Counter, !o.Full
	}
}

// rollBackOwnShard is DenialRollsBackOwnShardOnly's denial of a batch
// whose check idx failed: the checks before it on other partitions were
// prepared there, and their partitions commit. The caller holds s.mu.
func (s *Store) rollBackOwnShard(a *admission, idx int) {
	if s.cfg.Fault != DenialRollsBackOwnShardOnly || idx < 0 || idx >= a.n {
		return
	}
	denied := s.PartitionOf(a.keys[idx])
	for i := range idx {
		if s.PartitionOf(a.keys[i]) != denied && !a.obs[i].Full {
			s.put(a, i, a.keys[i], a.next(i))
		}
	}
}

// clock26 is ClockRefreshedEveryFourth's clock: a fresh read on every
// fourth admission, the latest reading otherwise.
func (a *admission) clock26() (domain.Instant, bool) {
	s := a.s
	if s.cfg.Fault != ClockRefreshedEveryFourth {
		return 0, false
	}
	if s.clockCalls.Add(1)%4 != 1 {
		return domain.Instant(s.last.Load()), true
	}
	return s.now(), true
}

// skipsPartition26 reports whether CleanupExpired passes over k's
// partition (CleanupSkipsLastPartition); p < 0 is CleanupExpired's walk.
func (s *Store) skipsPartition26(k domain.CounterKey, p int) bool {
	return s.cfg.Fault == CleanupSkipsLastPartition && p < 0 && s.cfg.Partitions > 1 &&
		s.PartitionOf(k) == s.cfg.Partitions-1
}

// reapplyOnConflict is ConflictRetryReappliesWrite's conflict: the
// attempt's write is taken to have applied before the commit failed, so
// each check's cost is added to the counter it read, at now. The caller
// holds s.mu and the admission's locks.
func (s *Store) reapplyOnConflict(a *admission, now domain.Instant) {
	if s.cfg.Fault != ConflictRetryReappliesWrite {
		return
	}
	for i, k := range a.keys {
		ch := a.check(i)
		c, ok := s.entries[k]
		if !a.present[i] || !ok {
			continue // a new key's slot is not the attempt's to take
		}
		b := a.before[i]
		if b.Active(now) {
			b.Used = min(b.Used+ch.Cost(), ch.Policy().Limit())
		} else {
			b = domain.Counter{Used: ch.Cost(), Start: now, Expires: now.Add(ch.Policy().Window())}
		}
		if c.Active(now) && c.Start == b.Start {
			b.Used = max(b.Used, c.Used)
		}
		s.entries[k] = b
	}
}

// observeOrder returns the order observe hands out a's free slots in:
// caller order, or with CapacityClaimsInKeyOrder ascending key order.
func (a *admission) observeOrder() []int {
	order := make([]int, a.n)
	for i := range order {
		order[i] = i
	}
	if a.s.cfg.Fault == CapacityClaimsInKeyOrder {
		slices.SortFunc(order, func(x, y int) int { return a.keys[x].Compare(a.keys[y]) })
	}
	return order
}
