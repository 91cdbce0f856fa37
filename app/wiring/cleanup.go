package wiring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/internal/callerctx"
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

	// mu guards busy, which is true while the loop runs passes. A loop
	// that is not busy once cancelled never starts another pass, so stop
	// can wait for it whatever its context: it returns without calling
	// the host's code.
	mu   sync.Mutex
	busy bool
}

// cleanupRun is what the loop does at every tick.
type cleanupRun struct {
	cleaners []cleaner
	// batch is the most counters one cleanup call removes.
	batch int
	// onError, when set, receives every failed pass's *CleanupError;
	// otherwise failures are logged at warning level.
	onError func(error)
	// observers see every pass, each called apart.
	observers []CleanupObserver
	logger    func() *slog.Logger
}

// startCleanupLoop starts a loop that cleans each of run's cleaners, in
// order, at every tick. It logs each store's pass at debug level, reports
// errors to run.onError or logs them at warning level, and logs each newly
// poisoned shard once at error level. stopTicks is called once the loop
// has ended.
//
// Every call of host code on the loop's goroutine (a host store's
// CleanupExpired and PoisonedShards, run.onError, the observers, the
// logger's handler) is recovered: a panic there is logged by its value's
// type and the loop goes on, as a crash of the host's process would take
// every request with it. A panic of CleanupExpired fails the pass.
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
			// A tick and the cancellation can arrive together, and select
			// picks either: a stopped loop starts no pass.
			if !l.setBusy(ctx, true) {
				return
			}
			for _, c := range run.cleaners {
				if !run.pass(ctx, c) {
					return
				}
			}
			l.setBusy(ctx, false)
		}
	}()
	return l
}

// ErrCleanupPanicked is matched by the [*CleanupError] of a pass whose
// store panicked in CleanupExpired. The loop recovered the panic, logged
// its value's type at error level and goes on at its next tick; the value
// itself, which may hold anything, is neither logged nor kept.
var ErrCleanupPanicked = errors.New("runlimit: cleanup panicked")

// ErrCleanupCount is matched by the [*CleanupError] of a call whose store
// reported an impossible count: below zero, or above the batch it was
// asked for ([ports.Cleaner] removes at most that many). The count is not
// taken, as it may be the store's backlog rather than what it removed
// (which, above the batch, would call the store again at once, without
// end), and the store's pass ends; the loop goes on at its next tick.
var ErrCleanupCount = errors.New("runlimit: cleanup reported an impossible count")

// pass cleans c once and reports the pass. It returns false when the loop
// is stopping.
func (run cleanupRun) pass(ctx context.Context, c cleaner) (goOn bool) {
	// The calls below recover the host's panics one by one; this catches
	// what they cannot, such as a panic of the logger's handler while
	// logging one, and ends only this store's pass.
	defer func() {
		if v := recover(); v != nil {
			run.logPanic(ctx, c.name, "cleanup pass", "", v)
			goOn = ctx.Err() == nil
		}
	}()
	began := time.Now()
	passCtx, own := run.startObservers(ctx, c.name)
	// An observer's context that is not derived from the loop's (a span
	// started from context.Background()) must not keep Close from
	// cancelling the pass.
	passCtx, release := callerctx.Bind(ctx, passCtx)
	defer release()
	removed, err := run.drain(passCtx, c)
	run.endObservers(own, c.name, removed, err)
	if err != nil && ctx.Err() != nil {
		return false // stopping: the error is the cancellation
	}
	// A poisoned shard is logged once, by its watch, however many passes
	// meet it: the pass's error is then no news.
	if c.poison != nil {
		run.guard(ctx, c.name, "store", "PoisonedShards", func() { c.poison.check(ctx, run.logger()) })
	}
	poisoned := c.poison != nil && errors.Is(err, memory.ErrPoisoned)
	if err == nil || poisoned {
		attrs := []slog.Attr{slog.String("store", c.name), slog.Int("removed", removed),
			slog.Duration("duration", time.Since(began))}
		if poisoned {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
		// A pass that removed counters is news; one that found nothing,
		// every interval, is not.
		level := slog.LevelDebug
		if removed > 0 {
			level = slog.LevelInfo
		}
		run.logger().LogAttrs(ctx, level, "runlimit: cleanup", attrs...)
		if err == nil {
			return true
		}
	}
	ce := &CleanupError{Store: c.name, Err: err}
	switch {
	case run.onError != nil:
		run.guard(ctx, c.name, "CleanupErrorFunc", "", func() { run.onError(ce) })
	case poisoned, errors.Is(err, ErrCleanupPanicked):
		// Logged already, at error level.
	default:
		run.logger().LogAttrs(ctx, slog.LevelWarn, "runlimit: cleanup failed; retrying at the next tick",
			slog.String("store", c.name), slog.Int("removed", removed), slog.String("error", ce.Error()))
	}
	return true
}

// startObservers calls each observer's StartCleanup, each with the
// context the one before returned, and returns the context the pass runs
// with and each observer's own, nil for one that panicked.
func (run cleanupRun) startObservers(ctx context.Context, store string) (context.Context, []context.Context) {
	if len(run.observers) == 0 {
		return ctx, nil
	}
	own := make([]context.Context, len(run.observers))
	for i, o := range run.observers {
		run.guard(ctx, store, "cleanup observer", "StartCleanup", func() {
			next := o.StartCleanup(ctx, store)
			if next == nil {
				next = ctx
			}
			own[i] = next
		})
		if own[i] != nil {
			ctx = own[i]
		}
	}
	return ctx, own
}

// endObservers calls the EndCleanup of each observer whose StartCleanup
// returned, with the context it returned.
func (run cleanupRun) endObservers(own []context.Context, store string, removed int, err error) {
	for i, o := range run.observers {
		if own[i] == nil {
			continue
		}
		run.guard(own[i], store, "cleanup observer", "EndCleanup", func() { o.EndCleanup(own[i], store, removed, err) })
	}
}

// guard calls f, the host's code, and recovers and logs its panic: who
// panicked, in call, on a pass over store.
func (run cleanupRun) guard(ctx context.Context, store, who, call string, f func()) {
	defer func() {
		if v := recover(); v != nil {
			run.logPanic(ctx, store, who, call, v)
		}
	}()
	f()
}

// logPanic logs a panic of the host's code on the loop's goroutine at
// error level, by its value's type only, as app's limiters log an
// admission observer's: the value and a stack may hold anything, a key
// or a subject included. A logger whose handler panics in turn is given
// up on.
func (run cleanupRun) logPanic(ctx context.Context, store, who, call string, v any) {
	defer func() { _ = recover() }()
	attrs := []slog.Attr{slog.String("store", store), slog.String("panic_type", fmt.Sprintf("%T", v))}
	if call != "" {
		attrs = append(attrs, slog.String("call", call))
	}
	run.logger().LogAttrs(ctx, slog.LevelError, "runlimit: "+who+" panicked; the loop goes on", attrs...)
}

// drain calls c until a call removes less than a full batch, a full batch
// suggesting more expired counters are waiting, and returns how many it
// removed.
func (run cleanupRun) drain(ctx context.Context, c cleaner) (removed int, err error) {
	for ctx.Err() == nil {
		n, err := run.cleanupOnce(ctx, c)
		if err != nil {
			return removed, err
		}
		removed += n
		if n < run.batch {
			return removed, nil
		}
	}
	return removed, ctx.Err()
}

// cleanupOnce calls c's CleanupExpired once. Its panic is recovered and
// logged, and fails the call with [ErrCleanupPanicked].
func (run cleanupRun) cleanupOnce(ctx context.Context, c cleaner) (n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			run.logPanic(ctx, c.name, "store", "CleanupExpired", v)
			n, err = 0, fmt.Errorf("%w: CleanupExpired panicked with a value of type %T", ErrCleanupPanicked, v)
		}
	}()
	n, err = c.CleanupExpired(ctx, run.batch)
	if err == nil && (n < 0 || n > run.batch) {
		return 0, fmt.Errorf("%w: CleanupExpired(max %d) reported %d removed", ErrCleanupCount, run.batch, n)
	}
	return n, err
}

// setBusy marks the loop as running passes or not. It reports false,
// marking nothing, once ctx, the loop's, is cancelled.
func (l *cleanupLoop) setBusy(ctx context.Context, busy bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	l.busy = busy
	return true
}

// stop ends the loop, cancelling a pass in progress, and waits for it until
// ctx is done.
func (l *cleanupLoop) stop(ctx context.Context) error {
	if l.stopIdle() {
		return nil
	}
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runlimit: the cleanup loop did not stop: %w", ctx.Err())
	}
}

// stopIdle cancels the loop and, when it is between passes, waits for it
// to end and reports true. A loop between passes ends at once, without
// calling the host's code, so the wait needs no deadline. A loop running
// a pass is left to end it, cancelled: stopIdle reports false.
func (l *cleanupLoop) stopIdle() bool {
	l.cancel()
	l.mu.Lock()
	busy := l.busy
	l.mu.Unlock()
	if busy {
		return false
	}
	<-l.done
	return true
}
