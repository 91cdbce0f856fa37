package ports

import (
	"context"

	"github.com/runlimit/runlimit/domain"
)

// Limiter is what host applications call: it validates checks, applies them
// through a [Store] and returns decisions in caller order.
type Limiter interface {
	// Check applies one check.
	Check(ctx context.Context, check domain.Check) (domain.Decision, error)
	// CheckAll applies checks as one atomic batch: every check is consumed,
	// or none is.
	CheckAll(ctx context.Context, checks []domain.Check) (domain.BatchDecision, error)
}
