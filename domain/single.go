package domain

// EvaluateCheck is the single-check form of the [Batch] protocol, for stores
// that offer a fast path for one check (ports.CheckAdmitter): with the key's
// lock held, observe its state into o, call EvaluateCheck at the store's
// time, and persist *next only when commit is true. The decision is written
// to *d. It applies exactly the rules [Batch.Evaluate] applies to a batch of
// one.
//
// It takes pointers because it runs on every admission: on the machines the
// project measures, copying a check, an observation and a decision in and
// out cost several times the rule itself.
//
// It returns an error, and the store must persist nothing, when c is invalid
// (an error matching [ErrInvalidInput]) or the stored counter is corrupt.
func EvaluateCheck(c *Check, now Instant, o *Observation, next *Counter, d *Decision) (commit bool, err error) {
	if err := c.validate(); err != nil {
		return false, err
	}
	if !o.Counter.valid(c.policy.def) {
		return false, &CorruptCounterError{Index: 0}
	}
	return evaluate(c, now, o, next, d), nil
}
