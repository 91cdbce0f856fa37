package login

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/runlimit/runlimit/app/runlimitfx"
)

// newHealthRoute serves GET /healthz from the runtime's readiness check:
// 200 while the runtime runs and every store answers (for PostgreSQL: the
// database answers and the schema is there), 503 before the service has
// started, once it stops and while a store fails. Every login then fails
// closed too, so a load balancer should send no traffic here.
//
// The route has no limit in front, and on PostgreSQL a readiness check
// is a transaction of several statements: probes that arrive while a
// check runs wait for it and share its answer (see [sharedCheck]), so
// that a flood of probes costs the database one check at a time and
// holds at most one pool connection, never the ones logins need.
func newHealthRoute(ready runlimitfx.ReadyFunc, logger *slog.Logger) routeResult {
	check := &sharedCheck{ready: ready, logger: logger}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := check.run(r.Context()); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, bodyNotReady)
			return
		}
		writeJSON(w, http.StatusOK, bodyReady)
	})
	return routeResult{Route: Route{Pattern: "GET /healthz", Handler: h}}
}

// sharedCheck runs the readiness check for one probe at a time; the
// probes that arrive meanwhile wait for its answer. An answer is never
// kept: the first probe after it runs a fresh check.
type sharedCheck struct {
	ready  runlimitfx.ReadyFunc
	logger *slog.Logger

	mu      sync.Mutex
	running *checkRun // nil when no check runs
}

// checkRun is one readiness check; err is set before done is closed.
type checkRun struct {
	done chan struct{}
	err  error
}

// run returns the answer of the check running now, or of one it starts.
// A probe that gives up (ctx done) while it waits answers at once; the
// check goes on for the others, without the context of the probe that
// started it, which may give up as well. The store's own timeouts bound
// it.
func (s *sharedCheck) run(ctx context.Context) error {
	s.mu.Lock()
	c := s.running
	if c == nil {
		c = &checkRun{done: make(chan struct{})}
		s.running = c
		go s.check(context.WithoutCancel(ctx), c)
	}
	s.mu.Unlock()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *sharedCheck) check(ctx context.Context, c *checkRun) {
	err := s.callReady(ctx)
	if err != nil {
		// Once per check, not once per probe. The error may name the
		// database's host; the probes learn only that the service is
		// not ready.
		s.logger.LogAttrs(ctx, slog.LevelWarn, "login: not ready", slog.String("error", err.Error()))
	}
	s.mu.Lock()
	s.running = nil
	s.mu.Unlock()
	c.err = err
	close(c.done)
}

// errCheckPanicked answers the probes of a readiness check that panicked:
// it runs on a goroutine of its own, where net/http would not recover
// the panic, and a probe must not take the service down.
var errCheckPanicked = errors.New("login: the readiness check panicked")

func (s *sharedCheck) callReady(ctx context.Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w (%T)", errCheckPanicked, v)
		}
	}()
	return s.ready(ctx)
}
