package httplimit

import (
	"context"

	"github.com/runlimit/runlimit/domain"
)

// Result is what a [Middleware] or [Guard] decided for an admitted request:
// allowed, or shadow-denied by a limit in shadow mode. A handler reads the
// middleware's with [FromContext].
type Result struct {
	v      verdict
	limits []limit
	outer  *Result
}

// Outcome returns [domain.Allowed] or [domain.ShadowDenied].
func (r Result) Outcome() domain.Outcome { return r.v.outcome }

// Decision returns the decision of limit i: its allowance when the request
// was allowed, the shadow denial for the limit that shadow-denied. The
// other limits of a shadow-denied batch report ok == false: nothing was
// consumed and their counters were not reported.
func (r Result) Decision(i int) (domain.Decision, bool) { return r.v.decision(i) }

// ShadowDenied returns the index of the limit that shadow-denied the
// request and its denial, when one did.
func (r Result) ShadowDenied() (index int, denial domain.Denial, ok bool) { return r.v.denied() }

// Len returns the number of limits checked.
func (r Result) Len() int { return len(r.limits) }

// Name returns the field name of limit i, or "" when i is out of range.
func (r Result) Name(i int) string {
	if i < 0 || i >= len(r.limits) {
		return ""
	}
	return r.limits[i].name
}

// Policy returns the policy of limit i, or the zero Policy when i is out
// of range.
func (r Result) Policy(i int) domain.Policy {
	if i < 0 || i >= len(r.limits) {
		return domain.Policy{}
	}
	return r.limits[i].policy
}

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
	return appendVerdictQuotas(dst, r.limits, &r.v)
}

// appendVerdictQuotas appends the quotas of one layer's limits. A limit
// whose name a quota already in dst has, an enclosing layer's, is left
// out: names are unique within a layer, and a clash between layers is
// refused before anything is checked (core.nameClash), so this only keeps
// that refusal, and anything that slips past it, from naming one quota
// twice.
func appendVerdictQuotas(dst []Quota, limits []limit, v *verdict) []Quota {
	enclosing := len(dst)
	for i := range limits {
		if namedIn(dst[:enclosing], limits[i].name) {
			continue
		}
		d, ok := v.decision(i)
		dst = append(dst, quotaOf(&limits[i], d, ok))
	}
	return dst
}

func namedIn(qs []Quota, name string) bool {
	for i := range qs {
		if qs[i].Name == name {
			return true
		}
	}
	return false
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

// NewContext returns a copy of ctx carrying res, so that a [Guard] called
// with a request holding it reports res's limits beside its own in the
// rate-limit fields, and chains res as its result's outer one. A handler
// that checks two Guards in turn passes the first one's result on:
//
//	res, ok := first.Admit(w, r, client)
//	if !ok {
//		return
//	}
//	r = r.WithContext(httplimit.NewContext(r.Context(), res))
//	if _, ok := second.Admit(w, r, identity); !ok {
//		return
//	}
//
// Without it, the second Guard's fields would replace the first one's.
// A nil ctx stands for context.Background.
func NewContext(ctx context.Context, res Result) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return &resultContext{Context: ctx, res: res}
}

// FromContext returns the result of the innermost [Middleware] that
// admitted the request carrying ctx, or the one [NewContext] put there. A
// nil ctx carries none.
func FromContext(ctx context.Context) (Result, bool) {
	if r := resultFrom(ctx); r != nil {
		return *r, true
	}
	return Result{}, false
}

func resultFrom(ctx context.Context) *Result {
	if ctx == nil {
		return nil
	}
	r, _ := ctx.Value(resultKey{}).(*Result)
	return r
}
