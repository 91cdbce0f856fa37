package wiring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/runlimit/runlimit/ports"
)

var (
	// ErrNotStarted is [Runtime.Ready]'s answer before [Runtime.Start], and
	// matches the error of a check on a PostgreSQL store opened from
	// Config.DatabaseURL before Start opened its pool (nothing consumed).
	ErrNotStarted = errors.New("runlimit: runtime is not started")
	// ErrClosed is the answer of [Runtime.Ready] and [Runtime.Start] once
	// [Runtime.Close] has begun. It matches [ports.ErrClosed], as the
	// closed stores' errors do.
	ErrClosed = fmt.Errorf("runlimit: runtime is closed: %w", ports.ErrClosed)
	// ErrReadyPanicked is matched by the [*NotReadyError] of a store whose
	// readiness check (its Ready, its Stats or its PoisonedShards, the
	// host's code for a host's store) panicked: the panic is recovered and
	// logged at error level by its value's type, never its value, which
	// may hold anything, and the store is not ready. A Start that meets
	// one fails, and closes the Runtime.
	ErrReadyPanicked = errors.New("runlimit: readiness check panicked")
	// ErrNotBuilt is the answer of [Runtime.Start] and [Runtime.Ready] on
	// a nil or zero Runtime, which [New] or [Open] did not build. It is
	// [ports.ErrNotBuilt].
	ErrNotBuilt = ports.ErrNotBuilt
)

// NotReadyError reports a store that failed its readiness check: its Ready
// (a [ports.ReadinessChecker]) or, without one, its Stats returned Err. For
// PostgreSQL that means the database did not answer, or the schema is
// missing or not the version this build needs (Err then wraps a
// [*postgres.SchemaError]): admissions would fail.
type NotReadyError struct {
	Store string // which store: "gate", "memory", "postgres" or "store"
	Err   error
}

// Error names the store and gives the store error's text.
func (e *NotReadyError) Error() string {
	return fmt.Sprintf("runlimit: the %s store is not ready: %v", e.Store, e.Err)
}

// Format prints [NotReadyError.Error] under every verb. A verb that does not
// fit the struct, such as %d, would otherwise make fmt print Err's fields.
func (e *NotReadyError) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(e.Error())) }

// MarshalJSON encodes the store's name and the error's text, never Err's
// fields: a driver's error can carry a connection string.
func (e NotReadyError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Store string `json:"store"`
		Error string `json:"error"`
	}{e.Store, e.Error()})
}

// Unwrap returns the store's error.
func (e *NotReadyError) Unwrap() error { return e.Err }

// reporter is a store whose readiness a probe checks, named for its errors:
// through its own readiness check when it has one, else through its Stats.
type reporter struct {
	name                string
	ports.StatsReporter // nil when the store reports no stats
	// ready is the store's own readiness check, or nil.
	ready ports.ReadinessChecker
}

// newReporter returns store's reporter, and false when the store can prove
// nothing: it neither checks its readiness nor reports stats.
func newReporter(name string, store ports.Store) (reporter, bool) {
	rep := reporter{name: name}
	rep.StatsReporter, _ = store.(ports.StatsReporter)
	rep.ready, _ = store.(ports.ReadinessChecker)
	return rep, rep.StatsReporter != nil || rep.ready != nil
}

// check proves the store ready: its own readiness check, which proves that
// admissions can run, is preferred to Stats, which can answer while every
// admission fails (PostgreSQL's ledger reads fine on a schema whose lock
// function is missing).
func (rep reporter) check(ctx context.Context, logger *slog.Logger) error {
	if rep.ready != nil {
		return guardReady(ctx, logger, rep.name, "Ready", func() error { return rep.ready.Ready(ctx) })
	}
	return guardReady(ctx, logger, rep.name, "Stats", func() error {
		_, err := rep.Stats(ctx)
		return err
	})
}

// guardReady calls check, a store's readiness code (the host's, for a
// host's store), and turns its panic into an error matching
// [ErrReadyPanicked], logged at error level by the value's type only: a
// probe's handler, or the host's start, must not crash for it.
func guardReady(ctx context.Context, logger *slog.Logger, store, call string, check func() error) (err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		err = fmt.Errorf("%w: %s panicked with a value of type %T", ErrReadyPanicked, call, v)
		// A logger whose handler panics in turn is given up on.
		defer func() { _ = recover() }()
		logger.LogAttrs(ctx, slog.LevelError, "runlimit: a readiness check panicked; the store is not ready",
			slog.String("store", store), slog.String("call", call), slog.String("panic_type", fmt.Sprintf("%T", v)))
	}()
	return check()
}

// Ready reports whether r can serve checks, for a readiness probe: nil once
// started and until closed, when every store proves itself ready, through
// its own readiness check (a [ports.ReadinessChecker]) or else its Stats.
// For PostgreSQL that is [postgres.Store.Ready]: the database answers, the
// admission's statements prepare and the schema is the version this build
// needs.
// Otherwise it returns [ErrNotStarted], [ErrClosed] or a [*NotReadyError]
// (matching [ErrReadyPanicked] when a store's check panicked: Ready
// never panics for a store),
// or, once started, the error of a ctx that is already done, without
// asking any store.
// A probe whose deadline ends the check gets an error matching
// context.DeadlineExceeded: a PostgreSQL store's too, when the server's
// statement or lock timeout, set from that deadline, ended it first.
// A host store that does neither is ready while the Runtime runs. Ready
// is safe for concurrent use and never waits for Start or Close. Probes
// that arrive while a check is in progress share it, and its answer:
// each check of a PostgreSQL store holds a connection of the admissions'
// pool while the database keeps it waiting. A probe whose context ends
// while it waits returns the context's error. A nil ctx
// is [ports.ErrNilContext]; a nil or zero Runtime is [ErrNotBuilt].
func (r *Runtime) Ready(ctx context.Context) error {
	if ctx == nil {
		return ports.ErrNilContext
	}
	st := r.state()
	if st == nil {
		return ErrNotBuilt
	}
	switch st.phase.Load() {
	case phaseNew:
		return ErrNotStarted
	case phaseClosed:
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		// The probe has given up: no store is asked, so none is blamed,
		// and a store whose check ignores its context cannot answer
		// ready for it.
		return err
	}
	return st.sharedReady(ctx)
}

// readyFlight is a readiness check in progress, whose answer the probes
// that arrive meanwhile share.
type readyFlight struct {
	done chan struct{}
	err  error
	// ctx is the context of the probe that runs the check.
	ctx context.Context
}

// sharedReady checks the stores, or waits for the check in progress and
// takes its answer. Each check of a PostgreSQL store holds a connection
// of the admissions' pool for as long as the database makes it wait (a
// locked table), up to the store's budget: probes that arrived together,
// one per connection, would take the pool from the admissions. A probe
// whose context ends while it waits returns the context's error. The
// answer of a check whose probe gave up (its context ended: a client that
// disconnected) says nothing of the stores, and a probe still waiting
// checks again.
func (r *runtimeState) sharedReady(ctx context.Context) error {
	for {
		r.readyMu.Lock()
		f := r.readyFlight
		if f == nil {
			f = &readyFlight{done: make(chan struct{}), ctx: ctx}
			r.readyFlight = f
			r.readyMu.Unlock()
			return r.fly(f)
		}
		r.readyMu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if f.err == nil || f.ctx.Err() == nil {
			return f.err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// fly runs the check f stands for, with its probe's context, and hands
// its answer to the probes waiting for it.
func (r *runtimeState) fly(f *readyFlight) error {
	defer func() {
		r.readyMu.Lock()
		r.readyFlight = nil
		r.readyMu.Unlock()
		close(f.done)
	}()
	f.err = r.storesReady(f.ctx)
	return f.err
}

// storesReady checks every store that can prove itself ready, and logs the
// shards poisoned since the last look.
func (r *runtimeState) storesReady(ctx context.Context) error {
	logger := r.logger()
	for _, w := range r.poison {
		if err := guardReady(ctx, logger, w.store, "PoisonedShards", func() error {
			w.check(ctx, logger)
			return nil
		}); err != nil {
			return &NotReadyError{Store: w.store, Err: err}
		}
	}
	for _, rep := range r.reporters {
		if err := rep.check(ctx, logger); err != nil {
			return &NotReadyError{Store: rep.name, Err: err}
		}
	}
	return nil
}

// StatsFuncs returns the Stats method of each of r's stores that reports
// its occupancy (a [ports.StatsReporter]), by the store's name: "gate",
// "memory", "postgres" or "store". Headroom gauges read them, such as
// those the otelrunlimit adapter registers. A PostgreSQL store over a pool
// opened from Config.DatabaseURL is listed once Start has opened it. The
// map is r's answer to keep.
func (r *Runtime) StatsFuncs() map[string]func(context.Context) (ports.Stats, error) {
	st := r.state()
	if st == nil {
		return map[string]func(context.Context) (ports.Stats, error){}
	}
	out := make(map[string]func(context.Context) (ports.Stats, error), len(st.reporters))
	for _, rep := range st.reporters {
		if rep.StatsReporter != nil {
			out[rep.name] = rep.Stats
		}
	}
	return out
}
