package wiring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/ports"
)

// CleanupError reports a failed cleanup call of the background loop, passed
// to [Config.CleanupErrorFunc] (or logged without one). The loop goes on at
// its next tick.
type CleanupError struct {
	Store string // which store: "gate", "memory", "postgres" or "store"
	Err   error
}

// Error names the store and gives the store error's text.
func (e *CleanupError) Error() string {
	return fmt.Sprintf("runlimit: cleanup of the %s store: %v", e.Store, e.Err)
}

// Format prints [CleanupError.Error] under every verb. A verb that does not fit
// the struct, such as %d, would otherwise make fmt print Err's fields.
func (e *CleanupError) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(e.Error())) }

// MarshalJSON encodes the store's name and the error's text, never Err's
// fields: a driver's error can carry row details or a connection string.
func (e CleanupError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Store string `json:"store"`
		Error string `json:"error"`
	}{e.Store, e.Error()})
}

// Unwrap returns the store's error. For PostgreSQL it is a
// [postgres.MaintenanceError] that says whether rows may have been removed.
func (e *CleanupError) Unwrap() error { return e.Err }

// CleanupObserver sees every pass of the Runtime's cleanup loop over each
// of its stores: a tracer starts a span in StartCleanup that the store's
// own calls nest under and ends it in EndCleanup; a metrics recorder
// counts runs, counters removed and failures. Both are called on the
// loop's goroutine, so they must not block for long; a panic in either is
// recovered and logged at error level, and the loop goes on.
//
// The adapter of [github.com/runlimit/runlimit/adapters/otelrunlimit]
// implements it.
type CleanupObserver interface {
	// StartCleanup is called before a pass over the named store ("gate",
	// "memory", "postgres" or "store"). The pass runs with the context it
	// returns; nil means ctx unchanged.
	StartCleanup(ctx context.Context, store string) context.Context
	// EndCleanup is called after the pass with the context StartCleanup
	// returned, the number of counters removed and the store's error:
	// nil, the store's failure (the loop retries at its next tick), or the
	// context's error when the Runtime is closing and the pass was cut
	// short.
	EndCleanup(ctx context.Context, store string, removed int, err error)
}

// cleaner is a store the loop cleans, named for its errors, with the watch
// on its poisoned shards when it can report them.
type cleaner struct {
	name string
	ports.Cleaner
	poison *poisonWatch
}

// cleanupLoop removes expired counters at every tick until stopped. One
// goroutine runs every pass, so passes never overlap: a tick that arrives
// during a pass waits (a time.Ticker drops it), it does not start a second one.
type cleanupLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// cleanupRun is what the loop does at every tick.
type cleanupRun struct {
	cleaners []cleaner
	// batch is the most counters one cleanup call removes.
	batch int
	// onError, when set, receives every failed pass's *CleanupError;
	// otherwise failures are logged at warning level.
	onError func(error)
	// observer, when set, sees every pass.
	observer CleanupObserver
	logger   func() *slog.Logger
}

// startCleanupLoop starts a loop that cleans each of run's cleaners, in
// order, at every tick. It logs each store's pass at debug level, reports
// errors to run.onError or logs them at warning level, and logs each newly
// poisoned shard once at error level. stopTicks is called once the loop
// has ended.
func startCleanupLoop(ticks <-chan time.Time, stopTicks func(), run cleanupRun) *cleanupLoop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &cleanupLoop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer stopTicks()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticks:
			}
			for _, c := range run.cleaners {
				if !run.pass(ctx, c) {
					return
				}
			}
		}
	}()
	return l
}

// pass cleans c once and reports the pass. It returns false when the loop
// is stopping.
func (run cleanupRun) pass(ctx context.Context, c cleaner) bool {
	began := time.Now()
	passCtx := run.startObserver(ctx, c.name)
	removed, err := drain(passCtx, c, run.batch)
	run.endObserver(passCtx, c.name, removed, err)
	if err != nil && ctx.Err() != nil {
		return false // stopping: the error is the cancellation
	}
	// A poisoned shard is logged once, by its watch, however many passes
	// meet it: the pass's error is then no news.
	if c.poison != nil {
		c.poison.check(ctx, run.logger())
	}
	poisoned := c.poison != nil && errors.Is(err, memory.ErrPoisoned)
	if err == nil || poisoned {
		attrs := []slog.Attr{slog.String("store", c.name), slog.Int("removed", removed),
			slog.Duration("duration", time.Since(began))}
		if poisoned {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
		run.logger().LogAttrs(ctx, slog.LevelDebug, "runlimit: cleanup", attrs...)
		if err == nil {
			return true
		}
	}
	ce := &CleanupError{Store: c.name, Err: err}
	switch {
	case run.onError != nil:
		run.onError(ce)
	case !poisoned:
		run.logger().LogAttrs(ctx, slog.LevelWarn, "runlimit: cleanup failed; retrying at the next tick",
			slog.String("store", c.name), slog.Int("removed", removed), slog.String("error", ce.Error()))
	}
	return true
}

// startObserver calls the observer's StartCleanup, if there is an
// observer, and returns the context the pass runs with.
func (run cleanupRun) startObserver(ctx context.Context, store string) (next context.Context) {
	next = ctx
	if run.observer == nil {
		return next
	}
	defer func() {
		if v := recover(); v != nil {
			next = ctx
			run.logObserverPanic(ctx, store, v)
		}
	}()
	if c := run.observer.StartCleanup(ctx, store); c != nil {
		next = c
	}
	return next
}

// endObserver calls the observer's EndCleanup, if there is an observer.
func (run cleanupRun) endObserver(ctx context.Context, store string, removed int, err error) {
	if run.observer == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			run.logObserverPanic(ctx, store, v)
		}
	}()
	run.observer.EndCleanup(ctx, store, removed, err)
}

// logObserverPanic logs a CleanupObserver's panic by its value's type
// only, as app's limiters log an admission observer's.
func (run cleanupRun) logObserverPanic(ctx context.Context, store string, v any) {
	run.logger().LogAttrs(ctx, slog.LevelError, "runlimit: cleanup observer panicked; the loop goes on",
		slog.String("store", store), slog.String("panic_type", fmt.Sprintf("%T", v)))
}

// drain calls c until a call removes less than a full batch, a full batch
// suggesting more expired counters are waiting, and returns how many it
// removed.
func drain(ctx context.Context, c cleaner, batch int) (removed int, err error) {
	for ctx.Err() == nil {
		n, err := c.CleanupExpired(ctx, batch)
		if err != nil {
			return removed, err
		}
		removed += n
		if n < batch {
			return removed, nil
		}
	}
	return removed, ctx.Err()
}

// stop ends the loop, cancelling a pass in progress, and waits for it until
// ctx is done.
func (l *cleanupLoop) stop(ctx context.Context) error {
	l.cancel()
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runlimit: the cleanup loop did not stop: %w", ctx.Err())
	}
}
