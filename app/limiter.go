package app

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// ErrInvalidConfig is matched by every error [NewLimiter] returns and by
// every [*ConfigError] of [Open] and [Module].
var ErrInvalidConfig = errors.New("runlimit: invalid limiter config")

// LimiterConfig configures a [Limiter].
type LimiterConfig struct {
	// MaxBatchSize is the largest batch CheckAll accepts. Default 32.
	MaxBatchSize int
}

// Limiter validates checks, applies them through a [ports.Store] and returns
// decisions in caller order. It is safe for concurrent use.
type Limiter struct {
	store ports.Store
	// single is store's fast path for one check, when it has one.
	single   ports.CheckAdmitter
	maxBatch int
	batches  sync.Pool
}

var _ ports.Limiter = (*Limiter)(nil)

// NewLimiter returns a limiter over store.
func NewLimiter(store ports.Store, cfg LimiterConfig) (*Limiter, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: no store", ErrInvalidConfig)
	}
	if cfg.MaxBatchSize < 0 {
		return nil, fmt.Errorf("%w: max batch size %d is negative", ErrInvalidConfig, cfg.MaxBatchSize)
	}
	if cfg.MaxBatchSize == 0 {
		cfg.MaxBatchSize = domain.DefaultMaxBatchSize
	}
	l := &Limiter{store: store, maxBatch: cfg.MaxBatchSize}
	l.single, _ = store.(ports.CheckAdmitter)
	l.batches.New = func() any { return new(domain.Batch) }
	return l, nil
}

// Check applies one check. Over the limit is a decision, not an error; an
// error means invalid input or a store failure, and the request must not
// proceed.
//
// On a store with a single-check path ([ports.CheckAdmitter]) a check costs
// one interface call and no pooled batch.
func (l *Limiter) Check(ctx context.Context, check domain.Check) (domain.Decision, error) {
	if l.single != nil {
		// The store validates through domain.EvaluateCheck before it reads
		// or changes any counter.
		return l.single.AdmitCheck(ctx, check)
	}
	return l.checkBatch(ctx, check)
}

// checkBatch applies one check as a batch of one, for stores without a
// single-check path.
func (l *Limiter) checkBatch(ctx context.Context, check domain.Check) (domain.Decision, error) {
	// A lone check reports its own error rather than a batch error about it.
	if err := check.Validate(); err != nil {
		return domain.Decision{}, err
	}
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

// CheckAll applies checks as one atomic batch: all are consumed or none is.
// When the batch is not allowed, the decision names the first failing check
// in caller order.
func (l *Limiter) CheckAll(ctx context.Context, checks []domain.Check) (domain.BatchDecision, error) {
	b := l.batches.Get().(*domain.Batch)
	defer l.batches.Put(b)
	if err := b.Reset(checks, l.maxBatch); err != nil {
		return domain.BatchDecision{}, err
	}
	bd, err := l.admit(ctx, b)
	if err != nil {
		return domain.BatchDecision{}, err
	}
	// The batch goes back to the pool: the caller gets its own decisions.
	return bd.Clone(), nil
}

func (l *Limiter) admit(ctx context.Context, b *domain.Batch) (domain.BatchDecision, error) {
	if err := l.store.Admit(ctx, b); err != nil {
		return domain.BatchDecision{}, err
	}
	return b.Decision()
}
