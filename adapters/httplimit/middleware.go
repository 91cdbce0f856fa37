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
