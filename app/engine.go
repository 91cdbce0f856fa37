package app

import (
	"context"
	"sync"

	"github.com/runlimit/runlimit/domain"
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

// checkBatch applies one valid check as a batch of one, for stores without
// a single-check path.
func (l *engine) checkBatch(ctx context.Context, check domain.Check) (domain.Decision, error) {
	b := l.batches.Get().(*domain.Batch)
	defer l.batches.Put(b)
	if err := b.Reset([]domain.Check{check}, l.maxBatch); err != nil {
		return domain.Decision{}, err
	}
	if err := l.store.Admit(ctx, b); err != nil {
		return domain.Decision{}, err
	}
	d, _, err := b.DecisionOf(0)
	return d, err
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
	if err := l.store.Admit(ctx, b); err != nil {
		return domain.BatchDecision{}, err
	}
	bd, err := b.Decision()
	if err != nil {
		return domain.BatchDecision{}, err
	}
	// The batch goes back to the pool: the caller gets its own decisions.
	return bd.Clone(), nil
}
