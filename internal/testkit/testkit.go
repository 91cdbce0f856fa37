// Package testkit holds the small test doubles several packages' tests
// share: a log sink safe for concurrent writers, a clock that panics on
// demand and a bounded wait for a channel. Only tests import it.
package testkit

import (
	"bytes"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runlimit/runlimit/adapters/memory"
)

// LogBuffer collects log records, safe for the goroutines a runtime or a
// server writes from.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Logger returns a debug-level logger writing text records to b, without
// their times: a time's digits would match a secret's run of digits by
// chance.
func (b *LogBuffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// TrapPanic is the value a TrapClock panics with.
const TrapPanic = "clock exploded"

// TrapClock is a [memory.ManualClock] that panics while armed, standing in
// for any panic that strikes while a memory store's shard is locked. Its
// zero value reads zero and is disarmed.
type TrapClock struct {
	memory.ManualClock
	armed atomic.Bool
}

// Now panics with [TrapPanic] while c is armed, and otherwise reads the
// manual clock.
func (c *TrapClock) Now() time.Duration {
	if c.armed.Load() {
		panic(TrapPanic)
	}
	return c.ManualClock.Now()
}

// Arm makes Now panic, or with false stop panicking.
func (c *TrapClock) Arm(on bool) { c.armed.Store(on) }

// Receive returns what ch delivers, or fails t when nothing comes within
// failSafe: a bound on a wait for what must happen, which only a hang
// reaches, never a measure of how fast it happens.
func Receive[T any](t testing.TB, ch <-chan T, failSafe time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failSafe):
		t.Fatalf("%s never happened", what)
		panic("unreachable")
	}
}
