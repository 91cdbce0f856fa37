package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/limiter"
	"github.com/runlimit/runlimit/ports"
)

// ErrInvalidConfig is matched by every error [NewLimiter] returns and by
// every [*ConfigError] of [Open] and [Module].
var ErrInvalidConfig = errors.New("runlimit: invalid limiter config")

// LimiterConfig configures a [Limiter].
type LimiterConfig struct {
	// MaxBatchSize is the largest batch CheckAll accepts. Default 32.
	MaxBatchSize int
	// Observer, when set, receives an [Event] for every admission. Default
	// nil: nothing is observed, at no cost.
	Observer Observer
	// Name tells this limiter's events apart from another's, such as
	// "gate" and "postgres". Default "".
	Name string
}

// Limiter validates checks, applies them through a [ports.Store] and returns
// decisions in caller order. It is safe for concurrent use.
type Limiter struct {
	engine limiter.Limiter
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
	if cfg.Observer != nil {
		// The observer sits between the engine and the store, so that a
		// limiter without one runs exactly the unobserved path.
		store = observe(store, cfg.Observer, cfg.Name)
	}
	l := new(Limiter)
	l.engine.Init(store, cfg.MaxBatchSize)
	return l, nil
}

// Check applies one check. Over the limit is a decision, not an error; an
// error means invalid input or a store failure, and the request must not
// proceed.
//
// On a store with a single-check path ([ports.CheckAdmitter]) a check costs
// one interface call and no pooled batch.
func (l *Limiter) Check(ctx context.Context, check domain.Check) (domain.Decision, error) {
	return l.engine.Check(ctx, check)
}

// CheckAll applies checks as one atomic batch: all are consumed or none is.
// When the batch is not allowed, the decision names the first failing check
// in caller order.
func (l *Limiter) CheckAll(ctx context.Context, checks []domain.Check) (domain.BatchDecision, error) {
	return l.engine.CheckAll(ctx, checks)
}
