package domain

import (
	"errors"
	"fmt"
	"time"
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
	checks []Check
	items  []item
	// decisions holds the allowed decisions in caller order once
	// [Batch.Decision] asks for them: the admission path writes each
	// check's decision beside its observation, without pointer writes
	// (and their write barriers).
	decisions []Decision
	phase     batchPhase
	// outcome is the evaluated result; failed is the failing check of a
	// batch that was not allowed.
	outcome Outcome
	// single marks a batch of one check that lives in one rather than in
	// checks and items ([Batch.ResetSingle]).
	single   bool
	observed int
	failed   int
	one      struct {
		check [1]Check
		item  [1]item
	}
}

// parts returns the checks and their items, wherever they live.
func (b *Batch) parts() ([]Check, []item) {
	if b.single {
		return b.one.check[:], b.one.item[:]
	}
	return b.checks, b.items
}

// itemAt returns the item of check i, wherever it lives.
func (b *Batch) itemAt(i int) *item {
	if b.single {
		return &b.one.item[i]
	}
	return &b.items[i]
}

// item is what a store reported for one check, what it must persist and
// the check's decision.
type item struct {
	obs  Observation
	next Counter
	d    Decision
	seen bool
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
	if b == nil {
		return &BatchError{Problem: BatchNotPrepared}
	}
	b.phase = phaseInvalid
	b.single = false
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
	// A batch above linearScanMax checks finds duplicate keys through a
	// map, so that a host that allows large batches does not let one
	// request cost time quadratic in its size (40,000 checks took over ten
	// seconds of comparisons).
	var firstOf map[CounterKey]int
	if n > linearScanMax {
		firstOf = make(map[CounterKey]int, n)
	}
	for i := range b.checks {
		c := &b.checks[i]
		if err := c.validate(); err != nil {
			return &BatchError{Problem: BatchInvalidCheck, Size: n, Index: i, Err: err}
		}
		if c.mode != b.checks[0].mode {
			return &BatchError{Problem: BatchMixedModes, Size: n, Index: i, First: 0}
		}
		if firstOf != nil {
			k := c.counterKey()
			if j, ok := firstOf[k]; ok {
				return &BatchError{Problem: BatchDuplicateKey, Size: n, Index: i, First: j}
			}
			firstOf[k] = i
		} else if j := b.indexOf(i); i > 0 && j >= 0 {
			return &BatchError{Problem: BatchDuplicateKey, Size: n, Index: i, First: j}
		}
	}
	b.items = resize(b.items, n)
	for i := range b.items {
		b.items[i].seen = false
	}
	b.observed = 0
	b.outcome = 0
	b.phase = phaseObserving
	return nil
}

// linearScanMax is the largest batch whose duplicate keys Reset finds by
// comparing each check with every earlier one: up to 2,016 comparisons of
// two 32-byte arrays, no allocation, and faster than hashing at that size.
const linearScanMax = 64

// indexOf returns the index below i whose key equals key i, or -1. Batches
// are small (32 by default), so a linear scan beats hashing and allocates
// nothing.
func (b *Batch) indexOf(i int) int {
	c := &b.checks[i]
	for j := range i {
		if b.checks[j].sameCounter(c) {
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

// Ready reports whether b can be handed to a store: nil for a batch that a
// successful [NewBatch] or [Batch.Reset] prepared and no store has driven
// yet. A nil batch, one never prepared, or one whose last Reset or
// evaluation failed is a [*BatchError] of problem [BatchNotPrepared]
// (matching [ErrInvalidInput]); one a store has already observed or
// evaluated is [ErrBatchProtocol]. Stores call it before any other work,
// so that a caller's mistake is reported as such and never touches
// storage.
func (b *Batch) Ready() error {
	switch {
	case b == nil || b.phase == phaseInvalid:
		return &BatchError{Problem: BatchNotPrepared}
	case b.phase != phaseObserving || b.observed != 0:
		return ErrBatchProtocol
	}
	return nil
}

// Len returns the number of checks: 0 for a nil Batch.
func (b *Batch) Len() int {
	if b == nil {
		return 0
	}
	if b.single {
		return 1
	}
	return len(b.checks)
}

// Check returns check i. Like Key and Next, it panics when i is out of
// range, as indexing a slice does: a store reads indexes below Len only.
func (b *Batch) Check(i int) Check {
	checks, _ := b.parts()
	return checks[i]
}

// Key returns the counter key of check i.
func (b *Batch) Key(i int) CounterKey {
	checks, _ := b.parts()
	return checks[i].counterKey()
}

// Mode returns the quota mode shared by every check: [Enforce] for a nil
// Batch or one with no checks.
func (b *Batch) Mode() Mode {
	if b.Len() == 0 {
		return Enforce
	}
	checks, _ := b.parts()
	return checks[0].mode
}

// Observe records what the store read for check i under its locks. An i
// outside the batch is the store's mistake: rather than panic with the
// store's locks held, it spoils the batch, whose Evaluate then reports
// [ErrBatchProtocol].
func (b *Batch) Observe(i int, o Observation) {
	if b == nil || b.phase != phaseObserving {
		return
	}
	if i < 0 || i >= b.Len() {
		b.phase = phaseInvalid
		return
	}
	it := b.itemAt(i)
	it.obs = o
	if !it.seen {
		it.seen = true
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
	if b == nil {
		return false, ErrBatchProtocol
	}
	checks, items := b.parts()
	if b.phase != phaseObserving || b.observed != len(checks) {
		b.phase = phaseInvalid
		return false, ErrBatchProtocol
	}
	b.phase = phaseEvaluated
	if b.single {
		return b.evaluateAt(0, &b.one.check[0], &b.one.item[0], now)
	}
	for i := range checks {
		if commit, err := b.evaluateAt(i, &checks[i], &items[i], now); !commit {
			return false, err
		}
	}
	return true, nil
}

// evaluateAt evaluates check i, c, whose observation is in it, as one step
// of Evaluate: it reports whether the batch can still commit, and records
// the outcome.
func (b *Batch) evaluateAt(i int, c *Check, it *item, now Instant) (bool, error) {
	if !it.obs.Counter.valid(c.def) {
		b.phase = phaseInvalid
		return false, &CorruptCounterError{Index: i}
	}
	if !evaluate(c, now, &it.obs, &it.next, &it.d) {
		b.outcome, b.failed = it.d.outcome, i
		return false, nil
	}
	b.outcome = Allowed
	return true, nil
}

// DecisionOf returns the decision of check i once evaluated: its allowance
// when the batch was allowed, its denial when it is the failing check, and
// ok false for the other checks of a batch that was not allowed. It is
// [Batch.Decision] followed by [BatchDecision.Decision] without building the
// batch's result, for callers that check one key. An i out of range is ok
// false, as [BatchDecision.Decision] answers it.
func (b *Batch) DecisionOf(i int) (d Decision, ok bool, err error) {
	switch {
	case b == nil || b.phase != phaseEvaluated:
		return Decision{}, false, ErrBatchProtocol
	case i < 0 || i >= b.Len():
		return Decision{}, false, nil
	case b.outcome == Allowed || i == b.failed:
		return b.itemAt(i).d, true, nil
	}
	return Decision{}, false, nil
}

// Next returns the state a committing store persists for check i.
func (b *Batch) Next(i int) Counter { return b.itemAt(i).next }

// Decision returns the evaluated result. Its allowed decisions share b's
// memory until the next Reset.
func (b *Batch) Decision() (BatchDecision, error) {
	if b == nil || b.phase != phaseEvaluated {
		return BatchDecision{}, ErrBatchProtocol
	}
	_, items := b.parts()
	if b.outcome == Allowed {
		b.decisions = resize(b.decisions, len(items))
		for i := range items {
			b.decisions[i] = items[i].d
		}
		return BatchDecision{outcome: Allowed, size: len(items), decisions: b.decisions}, nil
	}
	return BatchDecision{outcome: b.outcome, index: b.failed, size: len(items), denial: items[b.failed].d.denialPart()}, nil
}

// valid reports whether a stored counter can belong to policy p: nothing
// stored, or a positive count within the limit over a window no longer than
// the policy's.
func (c *Counter) valid(p *policyDef) bool {
	if c.Used == 0 {
		return c.Start == 0 && c.Expires == 0
	}
	// With Start < Expires the unsigned difference is the window's exact
	// length in microseconds, whatever their signs, and a policy's window
	// is whole milliseconds: comparing microseconds is Expires.Sub(Start)
	// <= window without Sub's saturating arithmetic, and keeps valid small
	// enough to be inlined on every admission. A policy's window is
	// positive, so its microseconds are an unsigned division: a multiply
	// and a shift, where a signed one adds a sign correction.
	return c.Used > 0 && c.Used <= p.limit && c.Start < c.Expires &&
		uint64(c.Expires)-uint64(c.Start) <= uint64(p.window)/uint64(time.Microsecond)
}

// evaluate applies the anchored fixed-window rule to one counter, writing
// the counter to persist on commit to next and the decision to d, and
// reports whether the check is allowed. A quota denial under a shadow-mode
// policy is shadow-denied; a storage-capacity denial never is. The
// observed counter must be valid for c's policy ([Counter.valid]).
//
// It works through pointers because it runs on every admission: passing
// checks, observations and decisions by value cost several times the rule
// itself.
func evaluate(c *Check, now Instant, o *Observation, next *Counter, d *Decision) bool {
	cur := &o.Counter
	if cur.Active(now) {
		return evaluateActive(c, now, cur, next, d)
	}
	p := c.def
	if !cur.Present() && o.Full {
		*d = denied(StorageCapacity, 0, false)
		if o.HasEarliestExpiry {
			d.after, d.hasRetry = max(o.EarliestExpiry.Sub(now), 0), true
		}
		return false
	}
	// Absent or expired: anchor a new window at now. An expired counter of
	// this key is renewed in place and needs no new slot.
	*next = Counter{Used: c.cost, Start: now, Expires: now.Add(p.window)}
	*d = allowed(p.limit, p.limit-c.cost, p.window)
	return true
}

// evaluateActive is evaluate for cur, a valid counter active at now: a
// quota denial, or the check's cost added to the window. next may be cur:
// every field of cur is read before next is written.
func evaluateActive(c *Check, now Instant, cur *Counter, next *Counter, d *Decision) bool {
	used, start, expires := cur.Used, cur.Start, cur.Expires
	// Time never runs backwards for a key: a store clock behind the
	// window's start is read as the start, so no duration below can
	// exceed the window. Every caller has checked the counter
	// (Counter.valid): now is then in [Start, Expires), which spans at most
	// the window, so the microseconds left are positive and, as a
	// Duration, at most the window: exact without Instant.Sub's saturating
	// arithmetic.
	left := time.Duration(expires-max(now, start)) * time.Microsecond
	limit := c.def.limit
	if c.cost > limit-used {
		*d = denied(QuotaExhausted, left, true)
		if c.mode == Shadow {
			d.outcome = ShadowDenied
		}
		return false
	}
	used += c.cost
	*next = Counter{Used: used, Start: start, Expires: expires}
	*d = allowed(limit, limit-used, left)
	return true
}
