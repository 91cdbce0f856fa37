package wiring

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

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

// cleaner is a store the loop cleans, named for its errors.
type cleaner struct {
	name string
	ports.Cleaner
}

// cleanupLoop removes expired counters at every tick until stopped. One
// goroutine runs every pass, so passes never overlap: a tick that arrives
// during a pass waits (a time.Ticker drops it), it does not start a second one.
type cleanupLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startCleanupLoop starts a loop that cleans each of cleaners, in order, at
// every tick, batch counters per call. It logs each store's pass at debug
// level and reports errors to onError, or logs them at warning level when
// onError is nil. stopTicks is called once the loop has ended.
func startCleanupLoop(ticks <-chan time.Time, stopTicks func(), cleaners []cleaner, batch int, onError func(error), logger func() *slog.Logger) *cleanupLoop {
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
			for _, c := range cleaners {
				began := time.Now()
				removed, err := drain(ctx, c, batch)
				if err == nil {
					logger().LogAttrs(ctx, slog.LevelDebug, "runlimit: cleanup",
						slog.String("store", c.name), slog.Int("removed", removed),
						slog.Duration("duration", time.Since(began)))
					continue
				}
				if ctx.Err() != nil {
					return // stopping: the error is the cancellation
				}
				ce := &CleanupError{Store: c.name, Err: err}
				if onError != nil {
					onError(ce)
					continue
				}
				logger().LogAttrs(ctx, slog.LevelWarn, "runlimit: cleanup failed; retrying at the next tick",
					slog.String("store", c.name), slog.Int("removed", removed), slog.String("error", ce.Error()))
			}
		}
	}()
	return l
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
