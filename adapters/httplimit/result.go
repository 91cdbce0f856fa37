package httplimit

import (
	"context"

	"github.com/runlimit/runlimit/domain"
)

// Result is what a [Middleware] or [Guard] decided for an admitted request:
// allowed, or shadow-denied by a limit in shadow mode. A handler reads the
// middleware's with [FromContext].
type Result struct {
	batch  domain.BatchDecision
	limits []limit
	outer  *Result
}

// Outcome returns [domain.Allowed] or [domain.ShadowDenied].
func (r Result) Outcome() domain.Outcome { return r.batch.Outcome() }

// Decision returns the limiter's decision for the batch of limits:
// Decisions for an allowed batch, Denied for the limit that shadow-denied.
func (r Result) Decision() domain.BatchDecision { return r.batch }

// Len returns the number of limits checked.
func (r Result) Len() int { return len(r.limits) }

// Name returns the field name of limit i.
func (r Result) Name(i int) string { return r.limits[i].name }

// Policy returns the policy of limit i.
func (r Result) Policy(i int) domain.Policy { return r.limits[i].policy }

// Outer returns the result of the Middleware around the one that decided
// r, when middleware are nested.
func (r Result) Outer() (Result, bool) {
	if r.outer == nil {
		return Result{}, false
	}
	return *r.outer, true
}

// appendQuotas appends the quotas of r's chain, outermost first.
func (r *Result) appendQuotas(dst []Quota) []Quota {
	if r == nil {
		return dst
	}
	dst = r.outer.appendQuotas(dst)
	return appendBatchQuotas(dst, r.limits, r.batch)
}

func appendBatchQuotas(dst []Quota, limits []limit, bd domain.BatchDecision) []Quota {
	for i := range limits {
		d, ok := bd.Decision(i)
		dst = append(dst, quotaOf(&limits[i], d, ok))
	}
	return dst
}

type resultKey struct{}

// resultContext carries a Result. It is one allocation where
// context.WithValue and a separate Result would be two.
type resultContext struct {
	context.Context
	res Result
}

func (c *resultContext) Value(key any) any {
	if key == (resultKey{}) {
		return &c.res
	}
	return c.Context.Value(key)
}

// FromContext returns the result of the innermost [Middleware] that
// admitted the request carrying ctx.
func FromContext(ctx context.Context) (Result, bool) {
	if r := resultFrom(ctx); r != nil {
		return *r, true
	}
	return Result{}, false
}

func resultFrom(ctx context.Context) *Result {
	r, _ := ctx.Value(resultKey{}).(*Result)
	return r
}
