package memory

import (
	"sync/atomic"
	"time"
	_ "unsafe" // for go:linkname
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
// the moment it was built: the clock time.Since reads for a time.Time that
// carries a monotonic reading, which never follows wall-clock steps.
type Clock interface {
	Now() time.Duration
}

// monotonicNow returns the runtime's monotonic clock in nanoseconds: the
// reading time.Now carries as its monotonic part and time.Since subtracts,
// without the wall-clock reading time.Now also takes or the arithmetic of a
// time.Time. The runtime keeps this name reachable for the packages that
// read the clock this way. One difference from time.Since: inside a
// testing/synctest bubble it still reads real time, so tests there inject
// a Clock.
//
//go:linkname monotonicNow runtime.nanotime
func monotonicNow() int64

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
