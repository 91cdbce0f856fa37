package domain

import (
	"math"
	"strconv"
	"time"
)

// Outcome is the kind of a decision.
type Outcome uint8

const (
	// Allowed: the quota was consumed and the request may proceed.
	Allowed Outcome = iota + 1
	// Denied: nothing was consumed and the request must not proceed.
	Denied
	// ShadowDenied: a shadow-mode policy would have denied; nothing was
	// consumed and the request may proceed.
	ShadowDenied
)

// String returns "allowed", "denied" or "shadow-denied".
func (o Outcome) String() string {
	switch o {
	case Allowed:
		return "allowed"
	case Denied:
		return "denied"
	case ShadowDenied:
		return "shadow-denied"
	}
	return "unknown"
}

// GoString returns the constant's name, so test failures read
// "domain.Allowed" rather than "0x1".
func (o Outcome) GoString() string {
	switch o {
	case Allowed:
		return "domain.Allowed"
	case Denied:
		return "domain.Denied"
	case ShadowDenied:
		return "domain.ShadowDenied"
	}
	return "domain.Outcome(" + strconv.Itoa(int(o)) + ")"
}

// DenialReason says why a check was denied.
type DenialReason uint8

const (
	// QuotaExhausted: the window has fewer units left than the check costs.
	QuotaExhausted DenialReason = iota + 1
	// StorageCapacity: the key is new and its storage partition is full of
	// live counters. Never shadowed: it protects the store, not a quota.
	StorageCapacity
)

// String returns "quota" or "storage-capacity".
func (r DenialReason) String() string {
	switch r {
	case QuotaExhausted:
		return "quota"
	case StorageCapacity:
		return "storage-capacity"
	}
	return "unknown"
}

// GoString returns the constant's name.
func (r DenialReason) GoString() string {
	switch r {
	case QuotaExhausted:
		return "domain.QuotaExhausted"
	case StorageCapacity:
		return "domain.StorageCapacity"
	}
	return "domain.DenialReason(" + strconv.Itoa(int(r)) + ")"
}

// Allowance describes an allowed check.
type Allowance struct {
	Limit      int64         // the policy's limit
	Remaining  int64         // units left in the window after this check
	ResetAfter time.Duration // time until the window ends, measured at the store's clock
}

// Denial describes a denied or shadow-denied check.
type Denial struct {
	reason     DenialReason
	retryAfter time.Duration
	hasRetry   bool
}

// Reason returns why the check was denied.
func (d Denial) Reason() DenialReason { return d.reason }

// RetryAfter returns the exact time until the check could succeed, measured
// at the store's clock. A storage-capacity denial may have none.
func (d Denial) RetryAfter() (time.Duration, bool) { return d.retryAfter, d.hasRetry }

// RetryAfterSeconds returns RetryAfter rounded up to whole seconds, as an HTTP
// Retry-After value wants it: 1 ns gives 1, 1.001 s gives 2.
func (d Denial) RetryAfterSeconds() (int64, bool) {
	if !d.hasRetry {
		return 0, false
	}
	return ceilSeconds(d.retryAfter), true
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 && s < math.MaxInt64 {
		s++
	}
	return s
}

// Decision is the result of one check: exactly one of allowed (with an
// [Allowance]), denied or shadow-denied (with a [Denial]).
//
// It is four words wide in four fields: stores return one on every
// admission, and the allowance's reset time and the denial's retry time
// share a field. The compiler keeps a struct of at most four fields and
// four words in registers from the store's return through every layer up
// to the caller; a fifth field would send each of those copies through
// memory. So the three one-byte fields are one (verdict), whose fields
// Decision's methods read as their own.
type Decision struct {
	verdict
	limit     int64
	remaining int64
	after     time.Duration // Allowed: ResetAfter; otherwise RetryAfter
}

// verdict is the kind of a [Decision], in one word.
type verdict struct {
	outcome  Outcome
	reason   DenialReason
	hasRetry bool
}

func allowed(limit, remaining int64, resetAfter time.Duration) Decision {
	return Decision{verdict: verdict{outcome: Allowed}, limit: limit, remaining: remaining, after: resetAfter}
}

func denied(reason DenialReason, retryAfter time.Duration, hasRetry bool) Decision {
	return Decision{verdict: verdict{outcome: Denied, reason: reason, hasRetry: hasRetry}, after: retryAfter}
}

// Outcome returns the kind of decision.
func (d Decision) Outcome() Outcome { return d.outcome }

// PermitsRequest reports whether the request may proceed: true for allowed
// and shadow-denied.
func (d Decision) PermitsRequest() bool { return d.outcome == Allowed || d.outcome == ShadowDenied }

// Allowance returns the allowance of an allowed decision.
func (d Decision) Allowance() (Allowance, bool) {
	if d.outcome != Allowed {
		return Allowance{}, false
	}
	return Allowance{Limit: d.limit, Remaining: d.remaining, ResetAfter: d.after}, true
}

// Denial returns the denial of a denied or shadow-denied decision.
func (d Decision) Denial() (Denial, bool) {
	if d.outcome != Denied && d.outcome != ShadowDenied {
		return Denial{}, false
	}
	return d.denialPart(), true
}

func (d Decision) denialPart() Denial {
	return Denial{reason: d.reason, retryAfter: d.after, hasRetry: d.hasRetry}
}

// BatchDecision is the result of an atomic batch. When allowed, it holds one
// allowed [Decision] per check in caller order. Otherwise nothing was
// consumed and it names the first failing check in caller order.
type BatchDecision struct {
	outcome   Outcome
	index     int
	size      int
	denial    Denial
	decisions []Decision
}

// Outcome returns Allowed, Denied or ShadowDenied.
func (b BatchDecision) Outcome() Outcome { return b.outcome }

// PermitsRequest reports whether the request may proceed.
func (b BatchDecision) PermitsRequest() bool {
	return b.outcome == Allowed || b.outcome == ShadowDenied
}

// Size returns the number of checks in the batch.
func (b BatchDecision) Size() int { return b.size }

// Decisions returns the allowed decisions in caller order, or nil when the
// batch was not allowed.
func (b BatchDecision) Decisions() []Decision { return b.decisions }

// Denied returns the index of the first failing check and its denial when the
// batch was denied or shadow-denied.
func (b BatchDecision) Denied() (index int, denial Denial, ok bool) {
	if b.outcome != Denied && b.outcome != ShadowDenied {
		return 0, Denial{}, false
	}
	return b.index, b.denial, true
}

// Decision returns the decision of check i: the allowance when the batch was
// allowed; the denial for the failing check. Other checks of a batch that was
// not allowed report ok == false.
func (b BatchDecision) Decision(i int) (Decision, bool) {
	switch {
	case b.outcome == Allowed && i >= 0 && i < len(b.decisions):
		return b.decisions[i], true
	case (b.outcome == Denied || b.outcome == ShadowDenied) && i == b.index:
		return Decision{verdict: verdict{outcome: b.outcome, reason: b.denial.reason, hasRetry: b.denial.hasRetry}, after: b.denial.retryAfter}, true
	}
	return Decision{}, false
}

// Clone returns a copy of b whose decisions no longer share memory with the
// [Batch] that produced them.
func (b BatchDecision) Clone() BatchDecision {
	if b.decisions != nil {
		b.decisions = append([]Decision(nil), b.decisions...)
	}
	return b
}
