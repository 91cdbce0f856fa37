package memory

import (
	"sync/atomic"
	"time"
)

// Clock is an injectable monotonic clock: Now returns the time elapsed since
// an arbitrary fixed origin. The store reads it once per admission, after
// every lock the admission needs is held, and truncates it to whole
// milliseconds. A Clock must be safe for concurrent use.
//
// A Clock that moves backwards does not move the store backwards: each shard
// remembers the latest time it has seen and never goes below it.
//
// Without a Clock, a store uses the process's monotonic clock, measured from
// the moment it was built (time.Since on a time.Time that carries a
// monotonic reading, which never follows wall-clock steps).
type Clock interface {
	Now() time.Duration
}

// ManualClock is a [Clock] that moves only when told, for tests and demos.
// It starts at zero and is safe for concurrent use.
type ManualClock struct {
	now atomic.Int64
}

// NewManualClock returns a ManualClock at zero.
func NewManualClock() *ManualClock { return new(ManualClock) }

// Now returns the clock's current reading.
func (c *ManualClock) Now() time.Duration { return time.Duration(c.now.Load()) }

// Advance moves the clock by d. A negative d moves it backwards, as
// [ManualClock.Set] may.
func (c *ManualClock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// Set moves the clock to d. It may move backwards, which lets tests show
// that a store clamps a regressing clock instead of refilling quotas.
func (c *ManualClock) Set(d time.Duration) { c.now.Store(int64(d)) }
