package memory

import (
	"context"
	"errors"
	"slices"
	"time"

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
// A batch of one is a single check, and is applied as [Store.AdmitCheck]
// applies one: optimistically, under its entry's lock, when its key is
// stored and active (see the package documentation), and otherwise
// through the steps above.
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
	if err := usable(ctx, s); err != nil {
		return err
	}
	n := b.Len()
	if n > s.maxBatch {
		return &domain.BatchError{Problem: domain.BatchTooLarge, Size: n, Max: s.maxBatch}
	}
	if n == 1 {
		c := b.Check(0)
		var d domain.Decision
		return s.admitOne(ctx, &c, &d, b)
	}
	p := s.plans.Get().(*plan)
	err := s.prepare(p, b)
	if err == nil {
		err = apply(s, ctx, b, &p.checks, &p.shards)
	}
	// A plan an unwinding panic skips is left to the garbage collector.
	s.plans.Put(p)
	return err
}

// AdmitCheck applies a single check exactly as Admit applies a batch of
// one, through the same two steps, without a pooled batch or an
// allocation ([ports.CheckAdmitter]). It is the path app.Limiter's Check
// takes, and the one the single-check benchmarks measure.
//
// An invalid check (its [domain.CheckError]) and a nil ctx
// ([ports.ErrNilContext]) are reported before anything else, whatever state
// the store or ctx is in, and before any lock or clock read.
func (s *Store) AdmitCheck(ctx context.Context, c domain.Check) (domain.Decision, error) {
	if err := domain.ValidateCheck(&c); err != nil {
		return domain.Decision{}, err
	}
	if err := usable(ctx, s); err != nil {
		return domain.Decision{}, err
	}
	// admitOne's two steps for a check without a batch, written out: a
	// call more on every admission costs more than the rest of this
	// function.
	var d domain.Decision
	hash := c.CounterKeyHash64()
	i := s.shardAt(hash)
	// A done ctx goes to the locked flow, which reports it, or a closed
	// store before it. Tested here, before the optimistic path's frame
	// holds anything, the interface call spills nothing of it.
	done, err := false, error(nil)
	if ctx.Err() == nil {
		done, err = s.admitOptimistic(&c, hash, &s.shards[i], i, nil, &d)
	}
	if !done {
		err = s.admitOneLocked(ctx, &c, hash, &s.shards[i], i, &d, nil)
	}
	if err != nil {
		return domain.Decision{}, err
	}
	return d, nil
}

// admitOne applies c, a valid check, for Admit's batch of one, b, and
// writes its decision to d: optimistically when it can
// ([Store.admitOptimistic]), otherwise through the locked flow as a batch
// of one planned in arrays of one on the stack ([Store.admitOneLocked]).
// b ends evaluated either way. AdmitCheck takes the same two steps without
// a batch, which the locked flow then builds on the stack only when it
// runs. A batch of one cannot overflow its shard: New never makes more
// shards than MaxKeys, so every shard holds at least one key.
func (s *Store) admitOne(ctx context.Context, c *domain.Check, d *domain.Decision, b *domain.Batch) error {
	hash := c.CounterKeyHash64()
	i := s.shardAt(hash)
	sh := &s.shards[i]
	var seen observed
	if ctx.Err() != nil {
		// The locked flow reports a done ctx, or a closed store before it.
		return s.admitOneLocked(ctx, c, hash, sh, i, d, b)
	}
	if done, err := s.admitOptimistic(c, hash, sh, i, &seen, d); done {
		if err != nil {
			return err
		}
		// Admit's caller reads the batch: it evaluates what was observed,
		// at the time it was observed, to the decision already written.
		b.Observe(0, domain.Observation{Counter: seen.counter})
		if _, err := b.Evaluate(seen.now); err != nil {
			return &OpError{Op: "admit", Err: err}
		}
		return nil
	}
	return s.admitOneLocked(ctx, c, hash, sh, i, d, b)
}

// admitOneLocked is admitOne's locked flow, kept out of line so that the
// optimistic path's frame holds none of a plan.
//
//go:noinline
func (s *Store) admitOneLocked(ctx context.Context, c *domain.Check, hash uint64, sh *shard, i int, d *domain.Decision, b *domain.Batch) error {
	checks := [1]planned{{key: c.CounterKey(), hash: hash, sh: sh, index: int32(i)}}
	shards := [1]planShard{{sh: sh, index: i, keys: 1}}
	if b != nil {
		return apply(s, ctx, b, &checks, &shards)
	}
	var one domain.Batch
	if err := one.ResetSingle(c); err != nil {
		return err
	}
	if err := apply(s, ctx, &one, &checks, &shards); err != nil {
		return err
	}
	var err error
	*d, _, err = one.DecisionOf(0)
	return err
}

// observed is what the optimistic path read under its entry's lock: the
// counter and the shard's time.
type observed struct {
	counter domain.Counter
	now     domain.Instant
}

// admitOptimistic is the path of the common single check, on a key its
// shard holds in an active window with nothing there to clean up: it
// takes the entry's own lock instead of the shard's, so that checks of
// different keys write no memory in common (but the shard's clock floor,
// once a millisecond) and cores do not take cache lines from each other.
// It runs the steps of the locked flow in the same order on the one key:
// the lock, one clock sample raised to the shard's latest time
// ([Store.now], [shard.clamp]), the observation, the domain's evaluation
// ([domain.EvaluateCounter], the rules of a batch of one), which writes
// the counter in place, keeping its window. It writes c's decision to d and,
// unless seen is nil, what it observed to seen. It reports done=false,
// having changed nothing but the shard's latest time, whenever any of that
// does not hold, and the locked flow takes over:
//
//   - the store is closed or the shard poisoned (its callers send a check
//     whose ctx is done to the locked flow without calling it);
//   - the key is not found, or a holder of the shard's lock was at work
//     while it was being found: the shard's sequence number was odd or
//     moved between the first read and the entry's lock, and what was read
//     may be stale;
//   - an entry of the shard has expired (cleanup is due), or the key's own
//     window has (a renewal moves its expiry in the heap).
//
// Holders of the shard's lock read or write an entry's counter only under
// the entry's lock, so a check that has validated its entry finishes its
// write before any of them sees the counter, and none of them starts
// without making the sequence number odd first.
//
// The only code of someone else's that runs while the entry's lock is held
// is an injected Clock: a panic there unlocks the entry and poisons the
// shard before it goes on, as in the locked flow ([Store.sampleHolding]).
func (s *Store) admitOptimistic(c *domain.Check, hash uint64, sh *shard, index int, seen *observed, d *domain.Decision) (done bool, err error) {
	seq := sh.seq.Load()
	// Closed and poisoned are read after seq and before the entry is
	// found, so that the check of seq under the entry's lock covers them:
	// a recovery or a poisoning of the shard in between moves seq, and the
	// locked flow takes over. Read under the entry's lock, they could miss
	// a RecoverPoisoned that ran entirely between the two, and decide on a
	// discarded entry.
	if seq&1 != 0 || s.closed.Load() || sh.poisoned.Load() {
		return false, nil
	}
	e := sh.findEntry(hash, seq)
	if e == nil {
		return false, nil
	}
	e.mu.Lock()
	if !sh.holds(e, c, seq) {
		e.mu.Unlock()
		return false, nil
	}
	var now domain.Instant
	lagging := false
	switch {
	case s.clock == nil:
		now = s.sampleMonotonic()
	case s.coarse != nil:
		now, lagging = truncMillis(time.Duration(s.coarse.now.Load())), true
	default:
		now = s.sampleHolding(e, index)
	}
	now = sh.clamp(now)
	if domain.Instant(sh.firstExpiry.Load()) <= now || !e.counter.Active(now) {
		e.mu.Unlock()
		return false, nil
	}
	if seen != nil {
		seen.counter, seen.now = e.counter, now
	}
	// The domain evaluates the entry's counter in place: it writes the
	// counter only when the check commits.
	expires := e.counter.Expires
	commit, err := domain.EvaluateCounter(c, now, &e.counter, d)
	if lagging && err == nil && d.Outcome() != domain.Allowed {
		// A CoarseClock's reading may trail the window's end: the locked
		// flow decides again at the exact time, so lag never denies.
		// Nothing was written.
		e.mu.Unlock()
		return false, nil
	}
	if commit && e.counter.Expires != expires {
		// An active window keeps its expiry; a domain that moved it has
		// left the heap wrong. Fail closed: the poisoned shard serves
		// nothing until RecoverPoisoned empties it.
		e.mu.Unlock()
		s.poisonShard(index)
		panic("runlimit: memory store: an active window moved its expiry")
	}
	e.mu.Unlock()
	if err != nil {
		return true, &OpError{Op: "admit", Err: err}
	}
	return true, nil
}

// sampleHolding reads an injected clock for the optimistic path, which
// holds e's lock: should the clock panic, e is unlocked and shard i
// poisoned before the panic goes on.
func (s *Store) sampleHolding(e *entry, i int) domain.Instant {
	ok := false
	defer func() {
		if !ok {
			e.mu.Unlock()
			s.poisonShard(i)
		}
	}()
	now := s.sample()
	ok = true
	return now
}

// poisonShard marks shard i poisoned under its lock, for a panic that
// unwinds without it held.
func (s *Store) poisonShard(i int) {
	sh := &s.shards[i]
	sh.lockWriter()
	s.poison(i)
	sh.unlockWriter()
}

// usable reports a nil ctx, a caller's mistake, and then a nil or zero
// store, which holds nothing and fails closed.
func usable(ctx context.Context, s *Store) error {
	if ctx == nil {
		return &OpError{Op: "admit", Err: ports.ErrNilContext}
	}
	if s == nil || len(s.shards) == 0 {
		return &OpError{Op: "admit", Err: ErrClosed}
	}
	return nil
}

// plan is the scratch space of a batch's admission: where each check goes
// and which shards to lock. Batches recycle plans through Store.plans, so
// that no admission allocates in the steady state; a single check plans in
// arrays of one on the stack.
type plan struct {
	checks []planned   // caller order
	shards []planShard // distinct shards, ascending: the lock order
}

// planned is one check's place: its key (built once), the key's digest,
// its shard, the position of that shard in plan.shards, and the slot
// observe found with its entry, whose lock the admission holds from the
// observation to the commit.
type planned struct {
	key   domain.CounterKey
	hash  uint64
	sh    *shard
	held  *entry
	index int32
	at    int32
	slot  int32
}

// planShard is one shard an admission locks: its index, how many of the
// batch's keys it holds, and how many new keys earlier checks have claimed
// on it.
type planShard struct {
	sh      *shard
	index   int
	keys    int
	pending int
}

// plannedChecks and plannedShards are the two shapes a plan comes in:
// arrays of one for a single check, planned on AdmitCheck's stack, and
// slices for a batch. apply and its helpers are generic over them for one
// reason: Go compiles a generic function once per shape, so the single
// check gets its own build of the one flow, in which every loop bound is
// the constant 1 and no slice is bounds-checked: the hot path of a single
// check pays for none of a batch's generality. There is one flow, written
// once.
type (
	plannedChecks interface{ [1]planned | []planned }
	plannedShards interface{ [1]planShard | []planShard }
)

// apply is the one admission flow, for Admit and AdmitCheck alike: it runs
// the admission of b, a ready batch, as checks and locked plan it (each
// check's place, and the shards to lock in ascending order), from the
// context's last word through the locks, the clock, cleanup, observation,
// evaluation and the commit, to the unlock.
func apply[C plannedChecks, S plannedShards](s *Store, ctx context.Context, b *domain.Batch, checks *C, locked *S) error {
	// The context is checked once the batch is known to be valid, so that
	// a caller's mistake is reported as such even when ctx is done, and
	// after the store's state, as ports.Closer asks: a closed store says
	// so whatever the context. The state is read again under the locks.
	if s.closed.Load() {
		return &OpError{Op: "admit", Err: ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return &OpError{Op: "admit", Err: err}
	}
	held := 0
	defer func() {
		if held > 0 {
			release(checks)
			poisonHeld(s, locked, held)
		}
	}()
	// The loops below test their bound after each step, as a plan always
	// holds at least one check and one shard: in the single check's build,
	// where the bound is the constant 1, the compiler then drops each loop
	// and keeps only its body.
	var err error
	for j := 0; ; {
		sh := (*locked)[j].sh
		sh.lockWriter()
		held++
		if s.closed.Load() || sh.poisoned.Load() {
			err = s.unusable("admit", (*locked)[j].index)
			break
		}
		if j++; j == len(*locked) {
			break
		}
	}
	if err != nil {
		unlock(locked, held)
		held = 0
		return err
	}

	// One clock sample for the batch, after every lock is held, raised to
	// the latest time any of its shards has seen, and every shard raised to
	// it: no shard, and so no key, ever sees time go backwards.
	var now domain.Instant
	if s.clock == nil {
		now = s.sampleMonotonic()
	} else {
		now = s.sample()
	}
	for j := 0; ; {
		now = (*locked)[j].sh.clamp(now)
		if j++; j == len(*locked) {
			break
		}
	}
	for j := range len(*locked) - 1 {
		// Each clamp raised its shard to the time so far; the last one saw
		// the batch's time, the earlier ones catch up.
		(*locked)[j].sh.clamp(now)
	}
	// Cleanup runs before any key is observed, so a batch's own expired key
	// is either still present (renewed in place) or already removed (and
	// its slot is free): both keep the slot accounting exact.
	for i := 0; ; {
		if sh := (*checks)[i].sh; sh.due(now) {
			sh.removeExpired(now, s.cleanup)
		}
		if i++; i == len(*checks) {
			break
		}
	}
	for i := 0; ; {
		pc := &(*checks)[i]
		ps := &(*locked)[pc.at]
		if pc.sh.observe(b, i, pc, ps.pending) {
			ps.pending++
		}
		if i++; i == len(*checks) {
			break
		}
	}
	commit, err := b.Evaluate(now)
	if commit {
		for i := 0; ; {
			pc := &(*checks)[i]
			if pc.held != nil {
				pc.sh.update(pc.held, pc.slot, b.Next(i))
			} else {
				pc.sh.add(&pc.key, pc.hash, b.Next(i))
			}
			if i++; i == len(*checks) {
				break
			}
		}
	}
	release(checks)
	for j := 0; ; {
		(*locked)[j].sh.unlockWriter()
		if j++; j == len(*locked) {
			break
		}
	}
	held = 0
	if err != nil {
		return &OpError{Op: "admit", Err: err}
	}
	return nil
}

// prepare fills p for a batch of several checks: each check's digest and
// shard, and the distinct shards in ascending order. It reports a
// [ShardOverflowError] for a batch that puts more keys on a shard than the
// shard can ever hold.
func (s *Store) prepare(p *plan, b *domain.Batch) error {
	n := b.Len()
	p.checks = resize(p.checks, n)
	p.shards = p.shards[:0]
	for i := range n {
		pc := &p.checks[i]
		pc.key = b.Key(i)
		pc.hash = pc.key.Hash64()
		si := s.shardAt(pc.hash)
		pc.sh, pc.index = &s.shards[si], int32(si)
		p.shards = append(p.shards, planShard{sh: pc.sh, index: si})
	}
	slices.SortFunc(p.shards, func(a, b planShard) int { return a.index - b.index })
	p.shards = slices.CompactFunc(p.shards, func(a, b planShard) bool { return a.index == b.index })
	for i := range p.checks {
		pc := &p.checks[i]
		j, _ := slices.BinarySearchFunc(p.shards, int(pc.index), func(ps planShard, si int) int { return ps.index - si })
		pc.at = int32(j)
		p.shards[j].keys++
	}
	// A validated batch has distinct keys, so the checks on a shard are the
	// keys it must hold at once if the batch is allowed.
	for _, ps := range p.shards {
		if c := ps.sh.capacity; ps.keys > c {
			return &ShardOverflowError{Shard: ps.index, Count: ps.keys, Capacity: c}
		}
	}
	return nil
}

// poisonHeld marks and unlocks the first n shards of locked, which a panic
// is unwinding through: any may be half-changed. The panic goes on.
func poisonHeld[S plannedShards](s *Store, locked *S, n int) {
	for j := range n {
		s.poison((*locked)[j].index)
		(*locked)[j].sh.unlockWriter()
	}
}

// release unlocks the entries observe locked.
func release[C plannedChecks](checks *C) {
	for i := range len(*checks) {
		if pc := &(*checks)[i]; pc.held != nil {
			pc.held.mu.Unlock()
			pc.held = nil
		}
	}
}

// unlock unlocks the first n shards of locked.
func unlock[S plannedShards](locked *S, n int) {
	for j := range n {
		(*locked)[j].sh.unlockWriter()
	}
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
