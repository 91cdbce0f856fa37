package domain

import (
	"errors"
	"fmt"
)

// DefaultMaxBatchSize is the default largest number of checks in one batch.
const DefaultMaxBatchSize = 32

// Errors a store can meet while driving a [Batch].
var (
	// ErrCorruptCounter: a stored counter breaks the window invariants. The
	// store must fail closed without consuming.
	ErrCorruptCounter = errors.New("runlimit: stored counter is corrupt")
	// ErrBatchProtocol: a store drove a batch out of order (evaluated twice,
	// before observing every key, or not at all).
	ErrBatchProtocol = errors.New("runlimit: store broke the batch protocol")
)

// CorruptCounterError names the check whose stored counter is corrupt. It
// never includes the key.
type CorruptCounterError struct {
	Index int
}

func (e *CorruptCounterError) Error() string {
	return fmt.Sprintf("runlimit: stored counter of check %d is corrupt", e.Index)
}

// Unwrap returns [ErrCorruptCounter].
func (e *CorruptCounterError) Unwrap() error { return ErrCorruptCounter }

// MayHaveConsumedQuota returns false: a store persists nothing for a batch
// whose evaluation failed.
func (e *CorruptCounterError) MayHaveConsumedQuota() bool { return false }

type batchPhase uint8

const (
	phaseInvalid batchPhase = iota
	phaseObserving
	phaseEvaluated
)

// Batch is a validated set of checks on its way through a store, and the
// protocol a store follows to apply it atomically:
//
//  1. lock every key ([Batch.Key]) in a deterministic order;
//  2. read each key's state and report it with [Batch.Observe];
//  3. read the store's clock and call [Batch.Evaluate], which applies the
//     domain's rules in caller order;
//  4. if Evaluate reports commit, persist [Batch.Next] for every index;
//     otherwise persist nothing;
//  5. unlock.
//
// The limiter then reads the result with [Batch.Decision]. A Batch is reused
// through [Batch.Reset] and is not safe for concurrent use.
type Batch struct {
	checks    []Check
	keys      []CounterKey
	obs       []Observation
	seen      []bool
	next      []Counter
	decisions []Decision
	phase     batchPhase
	observed  int
	result    BatchDecision
}

// NewBatch validates checks as a batch of at most maxSize checks (maxSize < 1
// means [DefaultMaxBatchSize]).
func NewBatch(checks []Check, maxSize int) (*Batch, error) {
	b := new(Batch)
	if err := b.Reset(checks, maxSize); err != nil {
		return nil, err
	}
	return b, nil
}

// Reset validates checks and makes b ready for a store, reusing its memory.
// Validation runs in this order: an empty batch; more than maxSize checks;
// then, walking in caller order, an invalid check, a check whose mode differs
// from the first check's, and a check whose counter key an earlier check
// already uses.
func (b *Batch) Reset(checks []Check, maxSize int) error {
	b.phase = phaseInvalid
	if maxSize < 1 {
		maxSize = DefaultMaxBatchSize
	}
	n := len(checks)
	if n == 0 {
		return &BatchError{Problem: BatchEmpty}
	}
	if n > maxSize {
		return &BatchError{Problem: BatchTooLarge, Size: n, Max: maxSize}
	}
	b.checks = append(b.checks[:0], checks...)
	b.keys = resize(b.keys, n)
	for i := range b.checks {
		c := &b.checks[i]
		if err := c.Validate(); err != nil {
			return &BatchError{Problem: BatchInvalidCheck, Size: n, Index: i, Err: err}
		}
		if c.policy.mode != b.checks[0].policy.mode {
			return &BatchError{Problem: BatchMixedModes, Size: n, Index: i, First: 0}
		}
		b.keys[i] = NewCounterKey(c.policy.fingerprint, c.key)
		if j := b.indexOf(b.keys[i], i); j >= 0 {
			return &BatchError{Problem: BatchDuplicateKey, Size: n, Index: i, First: j}
		}
	}
	b.obs = resize(b.obs, n)
	b.seen = resize(b.seen, n)
	clear(b.seen)
	b.next = resize(b.next, n)
	b.observed = 0
	b.result = BatchDecision{}
	b.phase = phaseObserving
	return nil
}

// indexOf returns the index below end whose key equals k, or -1. Batches are
// small (32 by default), so a linear scan beats hashing and allocates nothing.
func (b *Batch) indexOf(k CounterKey, end int) int {
	for j := 0; j < end; j++ {
		if b.keys[j] == k {
			return j
		}
	}
	return -1
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Len returns the number of checks.
func (b *Batch) Len() int { return len(b.checks) }

// Check returns check i.
func (b *Batch) Check(i int) Check { return b.checks[i] }

// Key returns the counter key of check i.
func (b *Batch) Key(i int) CounterKey { return b.keys[i] }

// Mode returns the quota mode shared by every check.
func (b *Batch) Mode() Mode { return b.checks[0].policy.mode }

// Observe records what the store read for check i under its locks.
func (b *Batch) Observe(i int, o Observation) {
	if b.phase != phaseObserving {
		return
	}
	b.obs[i] = o
	if !b.seen[i] {
		b.seen[i] = true
		b.observed++
	}
}

// Evaluate applies the fixed-window rules at the store's time now, in caller
// order, and reports whether the store must persist [Batch.Next] for every
// check. Every check is evaluated before anything may be consumed: the batch
// commits only when every check is allowed.
//
// It returns an error, and the store must persist nothing, when a stored
// counter is corrupt or the protocol was not followed.
func (b *Batch) Evaluate(now Instant) (commit bool, err error) {
	if b.phase != phaseObserving || b.observed != len(b.checks) {
		b.phase = phaseInvalid
		return false, ErrBatchProtocol
	}
	b.phase = phaseEvaluated
	b.decisions = resize(b.decisions, len(b.checks))
	for i := range b.checks {
		c := &b.checks[i]
		o := &b.obs[i]
		if !o.Counter.valid(c.policy) {
			b.phase = phaseInvalid
			return false, &CorruptCounterError{Index: i}
		}
		next, d := evaluate(c.policy, c.cost, now, o)
		if d.outcome != Allowed {
			if d.denial.reason == QuotaExhausted && c.policy.mode == Shadow {
				d.outcome = ShadowDenied
			}
			b.result = BatchDecision{outcome: d.outcome, index: i, size: len(b.checks), denial: d.denial}
			return false, nil
		}
		b.next[i] = next
		b.decisions[i] = d
	}
	b.result = BatchDecision{outcome: Allowed, size: len(b.checks), decisions: b.decisions}
	return true, nil
}

// Next returns the state a committing store persists for check i.
func (b *Batch) Next(i int) Counter { return b.next[i] }

// Decision returns the evaluated result. Its allowed decisions share b's
// memory until the next Reset.
func (b *Batch) Decision() (BatchDecision, error) {
	if b.phase != phaseEvaluated {
		return BatchDecision{}, ErrBatchProtocol
	}
	return b.result, nil
}

// valid reports whether a stored counter can belong to policy p: nothing
// stored, or a positive count within the limit over a window no longer than
// the policy's.
func (c Counter) valid(p Policy) bool {
	if c.Used == 0 {
		return c.Start == 0 && c.Expires == 0
	}
	return c.Used > 0 && c.Used <= p.limit && c.Start < c.Expires &&
		c.Expires.Sub(c.Start) <= p.window
}

// evaluate applies the anchored fixed-window rule to one counter.
func evaluate(p Policy, cost int64, now Instant, o *Observation) (Counter, Decision) {
	c := o.Counter
	if c.Active(now) {
		// Time never runs backwards for a key: a store clock behind the
		// window's start is read as the start, so no duration below can
		// exceed the window.
		if now < c.Start {
			now = c.Start
		}
		left := c.Expires.Sub(now)
		if cost > p.limit-c.Used {
			return c, Decision{outcome: Denied, denial: Denial{reason: QuotaExhausted, retryAfter: left, hasRetry: true}}
		}
		used := c.Used + cost
		return Counter{Used: used, Start: c.Start, Expires: c.Expires},
			Decision{outcome: Allowed, allowance: Allowance{Limit: p.limit, Remaining: p.limit - used, ResetAfter: left}}
	}
	if !c.Present() && o.Full {
		d := Denial{reason: StorageCapacity}
		if o.HasEarliestExpiry {
			d.retryAfter, d.hasRetry = max(o.EarliestExpiry.Sub(now), 0), true
		}
		return c, Decision{outcome: Denied, denial: d}
	}
	// Absent or expired: anchor a new window at now. An expired counter of
	// this key is renewed in place and needs no new slot.
	return Counter{Used: cost, Start: now, Expires: now.Add(p.window)},
		Decision{outcome: Allowed, allowance: Allowance{Limit: p.limit, Remaining: p.limit - cost, ResetAfter: p.window}}
}
