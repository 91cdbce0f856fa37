package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/nilcheck"
	"github.com/runlimit/runlimit/ports"
)

// engine is what a [Limiter] runs: the store, its single-check path
// ([Limiter.Check] takes it) and pooled batches. It is safe for concurrent
// use once init has returned, and must not be copied after that.
type engine struct {
	store ports.Store
	// single is store's fast path for one check, when it has one.
	single   ports.CheckAdmitter
	maxBatch int
	batches  sync.Pool
}

// init prepares l to apply checks through store, in batches of at most
// maxBatch checks. The caller has validated both: store is not nil and
// maxBatch is at least 1.
func (l *engine) init(store ports.Store, maxBatch int) {
	l.store, l.maxBatch = store, maxBatch
	l.single, _ = store.(ports.CheckAdmitter)
	l.batches.New = func() any { return new(domain.Batch) }
}

// admitCheck applies one valid check through the store's single-check
// path, or as a batch of one on a store without one, and returns what the
// store answered once [vetDecision] has passed it.
func (l *engine) admitCheck(ctx context.Context, check *domain.Check) (domain.Decision, error) {
	if l.single != nil {
		d, err := l.single.AdmitCheck(ctx, *check)
		return vetCheckDecision(check, d, err)
	}
	return l.checkBatch(ctx, *check)
}

// checkBatch applies one valid check as a batch of one, for stores without
// a single-check path.
func (l *engine) checkBatch(ctx context.Context, check domain.Check) (domain.Decision, error) {
	b := l.batches.Get().(*domain.Batch)
	defer l.batches.Put(b)
	if err := b.Reset([]domain.Check{check}, l.maxBatch); err != nil {
		return domain.Decision{}, err
	}
	if err := l.admit(ctx, b, 1); err != nil {
		return domain.Decision{}, err
	}
	d, _, err := b.DecisionOf(0)
	return vetDecision(d, err)
}

// admit hands b, a batch of n checks, to the store, and returns the
// store's error once [vetError] has passed it, or an error matching
// [domain.ErrBatchProtocol] when the store answered nil for a batch that no
// longer holds n checks: one it reset to other checks, whose decisions
// would speak for checks it never saw.
func (l *engine) admit(ctx context.Context, b *domain.Batch, n int) error {
	if err := l.store.Admit(ctx, b); err != nil {
		return vetError(err)
	}
	if b.Len() != n {
		return errBatchChanged
	}
	return nil
}

// Errors for a store that answered what it cannot have meant. Each matches
// [domain.ErrBatchProtocol]; [ports.MayHaveConsumedQuota] answers true, as
// nothing the store said can be trusted.
var (
	errBatchChanged = fmt.Errorf("%w: the store changed the number of checks in the batch", domain.ErrBatchProtocol)
	errNoOutcome    = fmt.Errorf("%w: the store returned a decision without an outcome and no error", domain.ErrBatchProtocol)
	errWrongMode    = fmt.Errorf("%w: the store returned a decision of the other quota mode than the check's", domain.ErrBatchProtocol)
)

// vetCheckDecision is [vetDecision] for the decision a store's
// single-check path returned for check, which the store built itself
// (a batch's decisions are the domain's, from the batch's own checks): it
// must also fit the check's quota mode. A shadow denial answers only a
// shadow-mode check, and would otherwise let an enforce-mode request over
// its limit through (PermitsRequest is true for it); a quota denial
// answers only an enforce-mode check.
func vetCheckDecision(check *domain.Check, d domain.Decision, err error) (domain.Decision, error) {
	d, err = vetDecision(d, err)
	if err != nil {
		return d, err
	}
	shadow := check.Policy().Mode() == domain.Shadow
	switch d.Outcome() {
	case domain.ShadowDenied:
		if !shadow {
			return domain.Decision{}, errWrongMode
		}
	case domain.Denied:
		if den, _ := d.Denial(); shadow && den.Reason() == domain.QuotaExhausted {
			return domain.Decision{}, errWrongMode
		}
	}
	return d, nil
}

// vetDecision returns d and err as a limiter may hand them to its caller:
// no decision with an error (a store that returned an allowed decision
// beside its error must not be read as allowing), the error passed by
// [vetError], and an error for a decision that is none of allowed, denied
// and shadow-denied without one (the zero Decision).
func vetDecision(d domain.Decision, err error) (domain.Decision, error) {
	if err != nil {
		return domain.Decision{}, vetError(err)
	}
	switch d.Outcome() {
	case domain.Allowed, domain.Denied, domain.ShadowDenied:
		return d, nil
	}
	return domain.Decision{}, errNoOutcome
}

// vetError returns err, a store's non-nil error, or, when err is a nil
// pointer (or func, map...) in the interface, an error matching
// [domain.ErrBatchProtocol] in its place: the caller must see an error,
// and one whose Error and MayHaveConsumedQuota do not dereference nil.
func vetError(err error) error {
	if nilcheck.IsNil(err) {
		return fmt.Errorf("%w: the store returned a nil %T as its error", domain.ErrBatchProtocol, err)
	}
	return err
}

// CheckAll applies checks as one atomic batch and returns decisions the
// caller owns. Like Check, it validates before the store sees anything.
func (l *engine) CheckAll(ctx context.Context, checks []domain.Check) (domain.BatchDecision, error) {
	b := l.batches.Get().(*domain.Batch)
	defer l.batches.Put(b)
	if err := b.Reset(checks, l.maxBatch); err != nil {
		return domain.BatchDecision{}, err
	}
	if ctx == nil {
		return domain.BatchDecision{}, ports.ErrNilContext
	}
	if err := l.admit(ctx, b, len(checks)); err != nil {
		return domain.BatchDecision{}, err
	}
	bd, err := b.Decision()
	if err != nil {
		return domain.BatchDecision{}, err
	}
	// The batch goes back to the pool: the caller gets its own decisions.
	return bd.Clone(), nil
}
