package brokenstores

import (
	"github.com/runlimit/runlimit/domain"
)

// This file holds the faults of the twenty-fourth blind hunt: an adapter
// author who wrote the store without reading the suite (see fault.go).

// answersApart reports whether the store hands the caller a decision
// evaluated apart from the one whose counters it wrote: at a later clock
// read (AnswersAtLaterClockRead), or at its first attempt's sample
// (AnswersAtFirstAttempt).
func (s *Store) answersApart() bool {
	return s.cfg.Fault == AnswersAtLaterClockRead || s.cfg.Fault == AnswersAtFirstAttempt
}

// decideApartBatch makes a's evaluation that of a scratch batch of b's
// checks, whose counters the store writes, and leaves b to answer, which
// evaluates b on the same observations at the time it is given, as an
// optimistic store replays the attempt that stood on the caller's batch.
func (a *admission) decideApartBatch(b *domain.Batch) {
	checks := make([]domain.Check, a.n)
	for i := range checks {
		checks[i] = b.Check(i)
	}
	var scratch *domain.Batch
	a.evaluate = func(now domain.Instant) (bool, error) {
		var err error
		if scratch, err = domain.NewBatch(checks, a.n); err != nil {
			return false, err
		}
		for i := range a.n {
			scratch.Observe(i, a.obs[i])
		}
		return scratch.Evaluate(now)
	}
	a.next = func(i int) domain.Counter { return scratch.Next(i) }
	a.denied = func() (int, domain.Outcome) {
		bd, err := scratch.Decision()
		if err != nil {
			return 0, domain.Denied
		}
		i, _, _ := bd.Denied()
		return i, bd.Outcome()
	}
	a.answer = func(at domain.Instant) error {
		for i := range a.n {
			b.Observe(i, a.obs[i])
		}
		_, err := b.Evaluate(at)
		return err
	}
}

// decideApartCheck is decideApartBatch for a single check c, answered in
// *d.
func (a *admission) decideApartCheck(c *domain.Check, d *domain.Decision) {
	var (
		next domain.Counter
		own  domain.Decision
	)
	a.evaluate = func(now domain.Instant) (bool, error) {
		return domain.EvaluateCheck(c, now, &a.obs[0], &next, &own)
	}
	a.next = func(int) domain.Counter { return next }
	a.denied = func() (int, domain.Outcome) { return 0, own.Outcome() }
	a.answer = func(at domain.Instant) error {
		var unused domain.Counter
		_, err := domain.EvaluateCheck(c, at, &a.obs[0], &unused, d)
		return err
	}
}

// answerLater is AnswersAtLaterClockRead's answer once the admission has
// written what it decided at its sample: the store reads the clock again
// for the caller's decision, as a store whose backend returns the stored
// counts and whose client judges them at its own time after the call.
func (a *admission) answerLater() error {
	if a.s.cfg.Fault != AnswersAtLaterClockRead {
		return nil
	}
	return a.answer(a.s.now())
}

// retrySkippingBatch is CapacityRetrySkipsBatchKeys's retry time for a
// new key of a in full partition p: the earliest expiry among the
// partition's counters that the batch does not name, though the batch's
// own stored counters, which a denied batch leaves as they were, hold
// their slots as well. The caller holds s.mu.
func (s *Store) retrySkippingBatch(a *admission, p int) (at domain.Instant, has bool) {
	mine := make(map[domain.CounterKey]bool, a.n)
	for _, k := range a.keys {
		mine[k] = true
	}
	for k, e := range s.entries {
		if s.PartitionOf(k) == p && !mine[k] && (!has || e.Expires < at) {
			at, has = e.Expires, true
		}
	}
	return at, has
}
