package httplimit

import "net/http"

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
//
// Middleware nest: the inner one's fields report the outer one's limits
// too, so their names must differ. An inner Middleware with a limit named
// like an outer one's refuses every request before it checks anything
// (a [*NameClashError], 503 by [DefaultReject]).
//
// Build a Middleware with [NewMiddleware]. A nil *Middleware or a zero
// Middleware has no limiter and fails closed: its handler answers every
// request with [DefaultReject]'s 503 Service Unavailable for a
// [Rejection] whose Err is [ErrNotBuilt], and never calls next.
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

// Handler returns next behind the middleware. A nil next is a mistake the
// handler fails closed on: every request is refused before any check, as a
// failure ([ReasonLimiter], [ErrNilHandler], 503 by [DefaultReject]).
// A nil *http.Request is refused with [ErrNilRequest] by [DefaultReject]
// (a RejectFunc may read the request), and a nil ResponseWriter gets
// nothing; neither reaches next.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return &handler{m: m, next: next}
}

type handler struct {
	m    *Middleware
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.m == nil || h.m.c == nil || h.m.key == nil {
		refuseUnbuilt(w, r)
		return
	}
	c := h.m.c
	switch {
	case w == nil:
		return
	case r == nil:
		// A RejectFunc may read the request: only DefaultReject is safe.
		DefaultReject(w, r, &Rejection{Reason: ReasonLimiter, Err: ErrNilRequest})
		return
	case h.next == nil:
		s := c.getScratch()
		c.refuse(w, r, s, resultFrom(r.Context()), Rejection{Reason: ReasonLimiter, Err: ErrNilHandler})
		c.putScratch(s)
		return
	}
	outer := resultFrom(r.Context())
	s := c.getScratch()
	if err := c.nameClash(outer); err != nil {
		c.refuse(w, r, s, outer, Rejection{Reason: ReasonLimiter, Err: err})
		c.putScratch(s)
		return
	}
	subject, err := h.m.key(s.subject[:0], r)
	if err == nil {
		err = checkSubject(0, subject)
	}
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

// refuseUnbuilt answers a request that reached a nil or zero Middleware or
// Guard: there is no limiter and no configured RejectFunc, so it is refused
// with DefaultReject's 503. Nothing is written without a ResponseWriter.
func refuseUnbuilt(w http.ResponseWriter, r *http.Request) {
	if w == nil {
		return
	}
	DefaultReject(w, r, &Rejection{Reason: ReasonLimiter, Err: ErrNotBuilt})
}
