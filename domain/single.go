package domain

// ResetSingle validates c and makes b a batch of c alone, ready for a store
// (see [Batch.Ready]). It is how a store's single-check path
// (ports.CheckAdmitter) runs the very flow its Admit runs for a batch,
// without a pooled batch or an allocation:
//
//	var b domain.Batch // on the stack
//	if err := b.ResetSingle(&c); err != nil {
//		return domain.Decision{}, err // c's own error
//	}
//	if err := s.admit(ctx, &b); err != nil { // the store's one flow
//		return domain.Decision{}, err
//	}
//	d, _, err := b.DecisionOf(0)
//
// The batch keeps its one check, a 64-byte copy of c, and its state in
// space of its own rather than in the slices a batch of several checks
// grows, so a Batch declared as a local variable stays on the stack as long
// as it goes only to code that does not keep it: passing it through an
// interface, such as a store's Admit method behind ports.Store, moves it
// to the heap.
//
// It reports c's own error ([CheckError], matching [ErrInvalidInput]), not
// a batch error about it. [Batch.Reset] turns b back into a batch of
// several checks.
func (b *Batch) ResetSingle(c *Check) error {
	if b == nil {
		return &BatchError{Problem: BatchNotPrepared}
	}
	b.phase = phaseInvalid
	if err := ValidateCheck(c); err != nil {
		return err
	}
	b.single = true
	b.one.check[0] = *c
	b.one.item[0].seen = false
	b.observed = 0
	b.outcome = 0
	b.phase = phaseObserving
	return nil
}

// EvaluateCheck is the single-check form of the [Batch] protocol, for stores
// that offer a fast path for one check (ports.CheckAdmitter): with the key's
// lock held, observe its state into o, call EvaluateCheck at the store's
// time, and persist *next only when commit is true. The decision is written
// to *d. It applies exactly the rules [Batch.Evaluate] applies to a batch of
// one. Stores that drive one flow for both paths use [Batch.ResetSingle]
// instead.
//
// It takes pointers because it runs on every admission: on the machines the
// project measures, copying a check, an observation and a decision in and
// out cost several times the rule itself.
//
// It returns an error, and the store must persist nothing, when c is invalid
// (an error matching [ErrInvalidInput]; a nil c included), when o, next or
// d is nil ([ErrBatchProtocol]: the store's mistake) or the stored counter
// is corrupt.
func EvaluateCheck(c *Check, now Instant, o *Observation, next *Counter, d *Decision) (commit bool, err error) {
	// The common case, a valid check of an active window, calls nothing:
	// every test is in line, and the rest is evaluateSlow's, so the
	// function needs no frame to spill into.
	if c == nil || !c.valid || o == nil || next == nil || d == nil || !o.Counter.valid(c.def) {
		return false, evaluateProblem(c, o, next, d)
	}
	if o.Counter.Active(now) {
		return evaluateActive(c, now, &o.Counter, next, d), nil
	}
	return evaluate(c, now, o, next, d), nil
}

// evaluateProblem names what EvaluateCheck refuses, in its documented
// order: the check, then the store's nil pointers, then the counter.
//
//go:noinline
func evaluateProblem(c *Check, o *Observation, next *Counter, d *Decision) error {
	if err := ValidateCheck(c); err != nil {
		return err
	}
	if o == nil || next == nil || d == nil {
		return ErrBatchProtocol
	}
	return &CorruptCounterError{Index: 0}
}

// EvaluateCounter is [EvaluateCheck] for a store that holds a stored key's
// counter in memory, under the key's lock: it evaluates c against *counter
// as EvaluateCheck does against an observation of it, and on commit writes
// the counter to persist over *counter. On a denial or an error *counter
// is unchanged. It spares such a store building an observation and
// copying the new counter back on every admission.
//
// The counter must be a stored one (Used > 0): an absent key's admission
// needs what only an [Observation] says, whether its partition is full.
// EvaluateCounter returns the errors EvaluateCheck returns, in the same
// order, and [ErrBatchProtocol] for a nil counter or d and for an absent
// counter.
func EvaluateCounter(c *Check, now Instant, counter *Counter, d *Decision) (commit bool, err error) {
	if c == nil || !c.valid || counter == nil || d == nil || counter.Used == 0 || !counter.valid(c.def) {
		return false, evaluateCounterProblem(c, counter, d)
	}
	if counter.Active(now) {
		return evaluateActive(c, now, counter, counter, d), nil
	}
	o := Observation{Counter: *counter}
	return evaluate(c, now, &o, counter, d), nil
}

// evaluateCounterProblem names what EvaluateCounter refuses, in its
// documented order.
//
//go:noinline
func evaluateCounterProblem(c *Check, counter *Counter, d *Decision) error {
	if err := ValidateCheck(c); err != nil {
		return err
	}
	if counter == nil || d == nil || counter.Used == 0 {
		return ErrBatchProtocol
	}
	return &CorruptCounterError{Index: 0}
}
