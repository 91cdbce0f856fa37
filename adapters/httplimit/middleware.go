package httplimit

import (
	"net/http"

	"github.com/runlimit/runlimit/domain"
)

// Middleware checks its limits for every request before the handler runs
// and before the body is read, as one atomic batch: a request is admitted
// only if every limit has quota, and then each is consumed. A denied
// request and a failure (of the key function or the limiter) go to the
// [RejectFunc] and never reach the handler. An admitted request reaches it
// with the configured rate-limit fields set and its [Result] in the
// request's context.
//
// Its Handler method fits http.ServeMux (Go 1.22 patterns included) and
// any router that takes func(http.Handler) http.Handler. It is safe for
// concurrent use.
type Middleware struct {
	c   *core
	key KeyFunc
}

// NewMiddleware validates cfg, which must have a Key, and returns a
// Middleware.
func NewMiddleware(cfg Config) (*Middleware, error) {
	if cfg.Key == nil {
		return nil, &ConfigError{Field: "Key", Want: "set: a Middleware derives the subject from the request"}
	}
	c, err := newCore(cfg)
	if err != nil {
		return nil, err
	}
	return &Middleware{c: c, key: cfg.Key}, nil
}

// Handler returns next behind the middleware.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	if next == nil {
		panic("httplimit: Middleware.Handler of a nil handler")
	}
	return &handler{m: m, next: next}
}

type handler struct {
	m    *Middleware
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := h.m.c
	outer := resultFrom(r.Context())
	s := c.getScratch()
	subject, err := h.m.key(s.subject[:0], r)
	if err != nil {
		c.refuse(w, r, s, outer, Rejection{Reason: ReasonKey, Err: err})
		c.putScratch(s)
		return
	}
	for i := range c.limits {
		s.checks[i] = c.check(i, subject)
	}
	v, ok := c.run(w, r, s, outer)
	c.putScratch(s)
	if !ok {
		return
	}
	ctx := &resultContext{Context: r.Context(), res: Result{v: v, limits: c.limits, outer: outer}}
	h.next.ServeHTTP(w, r.WithContext(ctx))
}

// check builds the check of limit i for subject.
func (c *core) check(i int, subject []byte) domain.Check {
	l := &c.limits[i]
	key := c.hasher.Key(l.policy, subject)
	if l.cost == 1 {
		return domain.NewCheck(l.policy, key)
	}
	// The cost was checked against the limit when the config was.
	ch, _ := domain.NewCheckCost(l.policy, key, l.cost)
	return ch
}

// run checks s.checks as one atomic batch. It writes the rate-limit fields
// and returns the verdict when the request may proceed; otherwise it has
// written the rejection.
//
// A single limit goes through Limiter.Check, the batch of one's own path:
// the same rules, without a pooled batch or a copy of its decisions.
func (c *core) run(w http.ResponseWriter, r *http.Request, s *scratch, outer *Result) (verdict, bool) {
	var v verdict
	var err error
	if len(s.checks) == 1 {
		var d domain.Decision
		d, err = c.limiter.Check(r.Context(), s.checks[0])
		v = verdictOfOne(d)
	} else {
		var bd domain.BatchDecision
		bd, err = c.limiter.CheckAll(r.Context(), s.checks)
		v = verdictOfBatch(bd)
	}
	if err != nil {
		// An error fails closed whatever decision came with it.
		c.refuse(w, r, s, outer, Rejection{Reason: ReasonLimiter, Err: err})
		return verdict{}, false
	}
	switch v.outcome {
	case domain.Allowed, domain.ShadowDenied:
		s.quotas = outer.appendQuotas(s.quotas[:0])
		s.quotas = appendVerdictQuotas(s.quotas, c.limits, &v)
		sortQuotas(s.quotas)
		c.fields.WriteFields(w.Header(), s.quotas)
		return v, true
	case domain.Denied:
		rej := Rejection{Reason: ReasonQuota, v: v}
		if _, denial, _ := v.denied(); denial.Reason() == domain.StorageCapacity {
			rej.Reason = ReasonCapacity
		}
		c.refuse(w, r, s, outer, rej)
	default:
		c.refuse(w, r, s, outer, Rejection{Reason: ReasonLimiter, Err: ErrUnknownOutcome})
	}
	return verdict{}, false
}

// refuse completes rej with the quotas of every limit checked so far and
// hands it to the RejectFunc.
func (c *core) refuse(w http.ResponseWriter, r *http.Request, s *scratch, outer *Result, rej Rejection) {
	s.quotas = outer.appendQuotas(s.quotas[:0])
	s.quotas = appendVerdictQuotas(s.quotas, c.limits, &rej.v)
	sortQuotas(s.quotas)
	rej.quotas, rej.fields = s.quotas, c.fields
	if rej.Reason == ReasonQuota || rej.Reason == ReasonCapacity {
		_, denial, _ := rej.v.denied()
		retry, ok := denial.RetryAfter()
		rej.retry, rej.hasRetry = retryAfterSeconds(s.quotas, retry, ok)
	}
	s.rej = rej
	c.reject(w, r, &s.rej)
}
