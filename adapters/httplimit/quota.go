package httplimit

import (
	"cmp"
	"slices"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// Quota is one policy's state as a response reports it to a [FieldWriter].
// Every policy checked for the request has one; Known says whether this
// response knows its current state.
type Quota struct {
	Name   string        // the policy's name in the fields, see [Limit.Name]
	Limit  int64         // units per window
	Window time.Duration // the policy's window
	Cost   int64         // units one request consumes
	Shadow bool          // the policy is in shadow mode: it never rejects
	// Known is true when Remaining and Reset describe this response: for
	// every check of an allowed batch, and for the check that denied or
	// shadow-denied a batch on its quota. The other checks of a batch that
	// was not allowed, and a check denied for storage capacity, are not
	// known: nothing was consumed and their counters were not reported.
	// Nor is a [Limit.Private] one, unless it denied the request on its
	// quota: its state is withheld, Remaining and Reset are zero.
	Known bool
	// Remaining is the units left in the window: 0 for a quota denial or a
	// shadow denial.
	Remaining int64
	// Reset is the time until the window ends, for a denial the time until
	// the check could succeed.
	Reset time.Duration
}

// quotaOf describes limit l after decision d; ok is false when the batch
// did not report this check's decision. A private limit's state is known
// only from its own denial, in a response that refuses the request anyway:
// its allowance, and a shadow denial that lets the request through, would
// tell the client about a counter that is not its own.
func quotaOf(l *limit, d domain.Decision, ok bool) Quota {
	q := Quota{
		Name:   l.name,
		Limit:  l.policy.Limit(),
		Window: l.policy.Window(),
		Cost:   l.cost,
		Shadow: l.policy.Mode() == domain.Shadow,
	}
	if !ok || (l.private && d.Outcome() != domain.Denied) {
		return q
	}
	if a, allowed := d.Allowance(); allowed {
		q.Known, q.Remaining, q.Reset = true, a.Remaining, a.ResetAfter
		return q
	}
	if den, denied := d.Denial(); denied && den.Reason() == domain.QuotaExhausted {
		retry, _ := den.RetryAfter()
		q.Known, q.Remaining, q.Reset = true, 0, retry
	}
	return q
}

// sortQuotas puts the most restrictive quota first: known before unknown;
// then fewest requests left (Remaining / Cost); then the longest wait until
// the window ends. Ties keep their order, which is the order the policies
// were checked in, outer middleware first.
func sortQuotas(qs []Quota) {
	slices.SortStableFunc(qs, func(a, b Quota) int {
		if a.Known != b.Known {
			if a.Known {
				return -1
			}
			return 1
		}
		if !a.Known {
			return 0
		}
		if c := cmp.Compare(requestsLeft(a), requestsLeft(b)); c != 0 {
			return c
		}
		return cmp.Compare(b.Reset, a.Reset)
	})
}

// requestsLeft is the requests q has left: its remaining units divided by
// the units one request costs, rounded down.
func requestsLeft(q Quota) int64 {
	if q.Cost <= 1 {
		return q.Remaining
	}
	return q.Remaining / q.Cost
}

// retryAfterSeconds is the Retry-After of a rejection: the longest wait,
// rounded up to whole seconds, among the denial itself and every known
// enforcing quota that has less than one request left, so that a client
// retrying then is not turned away by another policy this response already
// reported as exhausted. It is never earlier than the t of any of those
// quotas, which is the same rounding of the same duration.
func retryAfterSeconds(qs []Quota, denial time.Duration, hasDenial bool) (int64, bool) {
	secs, ok := int64(0), false
	if hasDenial {
		secs, ok = ceilSeconds(denial), true
	}
	for i := range qs {
		q := &qs[i]
		if q.Known && !q.Shadow && q.Remaining < max(q.Cost, 1) {
			secs, ok = max(secs, ceilSeconds(q.Reset)), true
		}
	}
	return secs, ok
}
