package wiring

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/runlimit/runlimit/ports"
)

// CleanupError reports a failed cleanup call of the background loop, passed
// to [Config.CleanupErrorFunc]. The loop goes on at its next tick.
type CleanupError struct {
	Store string // which store: "gate", "memory" or "postgres"
	Err   error
}

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
// every tick, batch counters per call, reporting errors to onError (if not
// nil). stopTicks is called once the loop has ended.
func startCleanupLoop(ticks <-chan time.Time, stopTicks func(), cleaners []cleaner, batch int, onError func(error)) *cleanupLoop {
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
				if err := drain(ctx, c, batch); err != nil {
					if ctx.Err() != nil {
						return // stopping: the error is the cancellation
					}
					if onError != nil {
						onError(&CleanupError{Store: c.name, Err: err})
					}
				}
			}
		}
	}()
	return l
}

// drain calls c until a call removes less than a full batch: a full batch
// suggests more expired counters are waiting.
func drain(ctx context.Context, c cleaner, batch int) error {
	for ctx.Err() == nil {
		n, err := c.CleanupExpired(ctx, batch)
		if err != nil {
			return err
		}
		if n < batch {
			return nil
		}
	}
	return ctx.Err()
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
