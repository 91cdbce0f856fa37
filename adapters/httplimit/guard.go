package httplimit

import "net/http"

// Guard checks limits from inside a handler, once the handler knows
// subjects the request line and headers do not carry, such as the identity
// in a login form. It answers exactly as a [Middleware] does: one atomic
// batch, the same rejection function and rate-limit fields, which it merges
// with those of the middleware that admitted the request. Their limits'
// names must differ: a Guard with a limit named like an enclosing one's
// refuses the request before it checks anything (a [*NameClashError]).
//
// It is safe for concurrent use.
//
// Build a Guard with [NewGuard]. A nil *Guard or a zero Guard has no
// limiter and fails closed: Admit writes [DefaultReject]'s 503 Service
// Unavailable for a [Rejection] whose Err is [ErrNotBuilt] and returns
// false.
type Guard struct {
	c *core
}

// NewGuard validates cfg, which must not have a Key, and returns a Guard.
func NewGuard(cfg Config) (*Guard, error) {
	if cfg.Key != nil {
		return nil, &ConfigError{Field: "Key", Want: "nil: a Guard takes its subjects from Admit"}
	}
	c, err := newCore(cfg)
	if err != nil {
		return nil, err
	}
	return &Guard{c: c}, nil
}

// Admit checks the guard's limits, subjects[i] for limit i, as one batch.
// When it returns true the request may proceed: the rate-limit fields on w
// now cover the middleware's limits and the guard's. When it returns false
// the rejection has been written and the handler must return. Call it
// before anything is written to w: once a final status has been sent, the
// fields and the refusal's status can no longer be, and a refusal would
// reach the client as the status already sent.
//
// Subjects are normalized bytes, such as [AppendIdentity] and
// [ClientNetwork.AppendSubject] produce. A different number of subjects
// than limits is refused with [ReasonKey] and [ErrSubjectCount], and an
// empty subject or one longer than [MaxSubjectLength] with [ReasonKey]
// and a [*SubjectError], before anything is checked.
//
// A nil r is refused with [ErrNilRequest] by [DefaultReject] (a RejectFunc
// may read the request); with a nil w nothing can be written, so Admit
// returns false and checks nothing.
func (g *Guard) Admit(w http.ResponseWriter, r *http.Request, subjects ...[]byte) (Result, bool) {
	switch {
	case g == nil || g.c == nil:
		refuseUnbuilt(w, r)
		return Result{}, false
	case w == nil:
		return Result{}, false
	case r == nil:
		DefaultReject(w, r, &Rejection{Reason: ReasonLimiter, Err: ErrNilRequest})
		return Result{}, false
	}
	c := g.c
	outer := resultFrom(r.Context())
	s := c.getScratch()
	defer c.putScratch(s)
	if err := c.nameClash(outer); err != nil {
		c.refuse(w, r, s, outer, Rejection{Reason: ReasonLimiter, Err: err})
		return Result{}, false
	}
	if len(subjects) != len(c.limits) {
		c.refuse(w, r, s, outer, Rejection{Reason: ReasonKey, Err: ErrSubjectCount})
		return Result{}, false
	}
	for i := range subjects {
		if err := checkSubject(i, subjects[i]); err != nil {
			c.refuse(w, r, s, outer, Rejection{Reason: ReasonKey, Err: err})
			return Result{}, false
		}
	}
	for i := range c.limits {
		s.checks[i] = c.check(i, subjects[i])
	}
	v, ok := c.run(w, r, s, outer)
	if !ok {
		return Result{}, false
	}
	return Result{v: v, limits: c.limits, outer: outer}, true
}
