package memory

import (
	"context"
	"errors"
	"slices"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// Admit applies b atomically, following the protocol documented on
// [domain.Batch]:
//
//  1. find each check's shard; reject a batch larger than
//     [Config.MaxBatchSize] or one that puts more keys on a shard than the
//     shard can ever hold ([ShardOverflowError]) before locking anything;
//  2. lock the distinct shards in ascending index, so batches naming the same
//     shards in any order cannot deadlock;
//  3. read the clock once, truncated to milliseconds and raised to the
//     latest time any of those shards has seen, and raise them all to it;
//  4. let each check remove up to [Config.CleanupPerCheck] expired entries
//     from its shard, oldest expiry first;
//  5. observe every key in caller order (new keys on one shard take its free
//     slots in that order), evaluate, and store the new counters only if
//     the whole batch is allowed;
//  6. unlock.
//
// A panic while shards are locked, such as from a panicking [Clock], marks
// every one of them poisoned before it propagates. Errors never consume
// quota: see [ErrClosed], [ErrPoisoned], [ShardOverflowError] and
// [OpError].
//
// Invalid input is reported before anything else, whatever state the store
// or ctx is in, and before any lock or clock read: a nil batch or one no
// successful [domain.NewBatch] or [domain.Batch.Reset] prepared (see
// [domain.Batch.Ready]), a nil ctx ([ports.ErrNilContext]), a batch larger
// than MaxBatchSize and a [ShardOverflowError] all match
// [domain.ErrInvalidInput]. A batch some store already drove is an [OpError]
// matching [domain.ErrBatchProtocol].
func (s *Store) Admit(ctx context.Context, b *domain.Batch) error {
	if err := b.Ready(); err != nil {
		if errors.Is(err, domain.ErrInvalidInput) {
			return err
		}
		return &OpError{Op: "admit", Err: err}
	}
	if ctx == nil {
		return &OpError{Op: "admit", Err: ports.ErrNilContext}
	}
	if s == nil {
		return &OpError{Op: "admit", Err: ErrClosed}
	}
	n := b.Len()
	if n > s.maxBatch {
		return &domain.BatchError{Problem: domain.BatchTooLarge, Size: n, Max: s.maxBatch}
	}
	// Single checks from app.Limiter take AdmitCheck; a batch of one is
	// rare enough to share the general path.
	p := s.plans.Get().(*plan)
	defer s.plans.Put(p)
	return s.admitMany(ctx, b, p)
}

// AdmitCheck applies a single check, exactly as Admit applies a batch of
// one, without a [domain.Batch] ([ports.CheckAdmitter]): it is the path
// app.Limiter's Check takes, and the one the single-check benchmarks
// measure.
//
// An invalid check (its [domain.CheckError]) and a nil ctx
// ([ports.ErrNilContext]) are reported before anything else, whatever state
// the store or ctx is in, and before any lock or clock read.
func (s *Store) AdmitCheck(ctx context.Context, c domain.Check) (domain.Decision, error) {
	if err := domain.ValidateCheck(&c); err != nil {
		return domain.Decision{}, err
	}
	if ctx == nil {
		return domain.Decision{}, &OpError{Op: "admit", Err: ports.ErrNilContext}
	}
	if s == nil {
		return domain.Decision{}, &OpError{Op: "admit", Err: ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return domain.Decision{}, &OpError{Op: "admit", Err: err}
	}
	key := c.CounterKey()
	i := s.shardOf(key)
	sh := &s.shards[i]
	sh.mu.Lock()
	locked := true
	defer func() {
		// Still locked here means a panic is unwinding: the shard may be
		// half-changed, so it fails closed from now on. The panic goes on.
		if locked {
			s.poison(i)
			sh.mu.Unlock()
		}
	}()
	if s.closed.Load() || sh.poisoned {
		locked = false
		sh.mu.Unlock()
		return domain.Decision{}, s.unusable("admit", i)
	}
	now := s.nowOn(sh)
	var (
		o    domain.Observation
		next domain.Counter
		d    domain.Decision
	)
	slot := sh.observeOne(&key, now, s.cleanup, &o)
	commit, err := domain.EvaluateCheck(&c, now, &o, &next, &d)
	if commit {
		sh.store(key, slot, next)
	}
	locked = false
	sh.mu.Unlock()
	if err != nil {
		// The check was validated above: this is a corrupt counter.
		return domain.Decision{}, &OpError{Op: "admit", Err: err}
	}
	return d, nil
}

// nowOn samples the clock for the locked shard sh: truncated to whole
// milliseconds and never earlier than the latest time sh has seen.
func (s *Store) nowOn(sh *shard) domain.Instant {
	now := max(s.sample(), sh.last)
	sh.last = now
	return now
}

// observeOne prepares the locked shard for a single check on k at now: it
// spends the cleanup allowance on expired entries, oldest first, then reads
// k into o and returns its slot (-1 when absent). The common cases (nothing
// expired, k present) stay inline.
func (sh *shard) observeOne(k *domain.CounterKey, now domain.Instant, cleanup int, o *domain.Observation) int32 {
	if len(sh.heap) > 0 && sh.heap[0].expires <= now {
		sh.removeExpired(now, cleanup)
	}
	if slot, present := sh.lookup(k); present {
		o.Counter = sh.entries[slot].counter
		return slot
	}
	slot, obs, _ := sh.observe(*k, 0)
	*o = obs
	return slot
}

// plan is the scratch space of a multi-check admission, recycled through
// Store.plans so that batches allocate nothing in the steady state.
type plan struct {
	shard   []int   // shard of check i
	at      []int   // position of check i's shard in order
	slot    []int32 // slot of check i, -1 when absent
	order   []int   // distinct shards, ascending: the lock order
	keys    []int   // checks on order[j]
	pending []int   // new keys claimed on order[j] so far
}

func (s *Store) admitMany(ctx context.Context, b *domain.Batch, p *plan) error {
	n := b.Len()
	p.shard = resize(p.shard, n)
	for i := range n {
		p.shard[i] = s.shardOf(b.Key(i))
	}
	p.order = append(p.order[:0], p.shard...)
	slices.Sort(p.order)
	p.order = slices.Compact(p.order)
	p.at = resize(p.at, n)
	p.slot = resize(p.slot, n)
	p.keys = resize(p.keys, len(p.order))
	p.pending = resize(p.pending, len(p.order))
	clear(p.keys)
	clear(p.pending)
	for i, si := range p.shard {
		j, _ := slices.BinarySearch(p.order, si)
		p.at[i] = j
		p.keys[j]++
	}
	// A validated batch has distinct keys, so the checks on a shard are the
	// keys it must hold at once if the batch is allowed.
	for j, si := range p.order {
		if c := s.shards[si].capacity; p.keys[j] > c {
			return &ShardOverflowError{Shard: si, Count: p.keys[j], Capacity: c}
		}
	}
	// The context is checked once the batch is known to be valid, so that
	// a caller's mistake is reported as such even when ctx is done.
	if err := ctx.Err(); err != nil {
		return &OpError{Op: "admit", Err: err}
	}

	held := 0
	defer func() {
		// A panic unwinding through held shards poisons all of them: any
		// may be half-changed. The panic goes on.
		for _, si := range p.order[:held] {
			s.poison(si)
			s.shards[si].mu.Unlock()
		}
	}()
	for _, si := range p.order {
		sh := &s.shards[si]
		sh.mu.Lock()
		held++
		if s.closed.Load() || sh.poisoned {
			s.unlock(p.order[:held])
			held = 0
			return s.unusable("admit", si)
		}
	}

	// One clock sample for the batch, raised to the latest time any of its
	// shards has seen, and every shard raised to it: no shard, and so no
	// key, ever sees time go backwards.
	now := s.sample()
	for _, si := range p.order {
		now = max(now, s.shards[si].last)
	}
	for _, si := range p.order {
		s.shards[si].last = now
	}
	// Cleanup runs before any key is observed, so a batch's own expired key
	// is either still present (renewed in place) or already removed (and
	// its slot is free): both keep the slot accounting exact.
	for _, si := range p.shard {
		s.shards[si].removeExpired(now, s.cleanup)
	}
	for i, si := range p.shard {
		j := p.at[i]
		slot, o, claims := s.shards[si].observe(b.Key(i), p.pending[j])
		if claims {
			p.pending[j]++
		}
		p.slot[i] = slot
		b.Observe(i, o)
	}
	commit, err := b.Evaluate(now)
	if commit {
		for i, si := range p.shard {
			s.shards[si].store(b.Key(i), p.slot[i], b.Next(i))
		}
	}
	s.unlock(p.order)
	held = 0
	if err != nil {
		return &OpError{Op: "admit", Err: err}
	}
	return nil
}

func (s *Store) unlock(order []int) {
	for _, si := range order {
		s.shards[si].mu.Unlock()
	}
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
