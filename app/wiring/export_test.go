package wiring

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/ports"
)

// OpenWithTicks opens like Open, with the cleanup loop driven by ticks
// instead of a time.Ticker.
func OpenWithTicks(ctx context.Context, cfg Config, ticks <-chan time.Time) (*Runtime, error) {
	r, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.state().newTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	if err := r.state().startOrClose(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// PoolOf returns the pool r's PostgreSQL store uses, or nil.
func PoolOf(r *Runtime) *pgxpool.Pool { return r.state().pool }

// StartCleanupLoop starts a cleanup loop over cleaners, named "c0", "c1"
// and so on, driven by ticks. It returns the loop's stop function and a
// channel closed when the loop has stopped its ticker.
func StartCleanupLoop(ticks <-chan time.Time, batch int, onError func(error), cleaners ...ports.Cleaner) (stop func(context.Context) error, tickerStopped <-chan struct{}) {
	named := make([]cleaner, len(cleaners))
	for i, c := range cleaners {
		named[i] = cleaner{name: "c" + string(rune('0'+i)), Cleaner: c}
	}
	stopped := make(chan struct{})
	l := startCleanupLoop(ticks, func() { close(stopped) }, cleanupRun{
		cleaners: named, batch: batch, onError: onError, logger: slog.Default,
	})
	return l.stop, stopped
}
