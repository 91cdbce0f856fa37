package memory

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// CoarseClock is a [Clock] read from memory rather than from the operating
// system: a background goroutine stores the monotonic time once a
// millisecond, and Now is one atomic load. On the machines this project is
// measured on, that takes a third off a single check of a stored key (a
// clock call costs 25–30 ns there; see the README's performance section).
//
// A reading trails the monotonic clock by up to a millisecond, plus however
// long the goroutine waits to be scheduled on a busy machine. A [Store]
// built on a CoarseClock never lets that lag shorten a window or deny a
// check the exact clock would allow:
//
//   - it reads the monotonic clock itself (the reading the goroutine
//     stores, taken on the spot) wherever it may start or renew a window,
//     and for cleanup: new keys, renewals, batches and every check that
//     takes a shard's lock. A window is anchored at the exact time.
//   - it uses the lagging reading only for a single check of a key stored
//     in an active window, and only when that check is allowed: the check is
//     counted in the window it finds, as if it had arrived up to the lag
//     earlier. A window thus ends as late as the lag, never earlier, and the
//     reset time of such a decision is as much longer.
//   - a check the lagging reading would deny is decided again at the exact
//     time, so a denial is never due to lag.
//
// Readings never go backwards, and a shard never sees time go backwards
// whichever of the two readings a check used. Another Store, or any code,
// that reads the clock through Now alone sees the lag everywhere.
//
// Stop the clock when its store is no longer used: a store on a stopped
// clock still starts windows at the exact time, but counts every check of
// an active window in it until a denial is decided again. A CoarseClock
// that becomes unreachable stops itself. Only [NewCoarseClock] makes a
// working one: [New] rejects a zero CoarseClock, Stop of a nil or zero
// one does nothing, and its Now returns 0.
type CoarseClock struct {
	*coarseTicker
}

// coarseTicker is the state the goroutine holds. The goroutine never refers
// to the CoarseClock wrapper, so an unreachable clock can be stopped by a
// cleanup.
type coarseTicker struct {
	now atomic.Int64
	// read takes an exact reading of the clock the goroutine samples.
	read func() time.Duration
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// NewCoarseClock starts a CoarseClock at the current monotonic time since
// its creation.
func NewCoarseClock() *CoarseClock {
	origin := time.Now()
	ticker := time.NewTicker(time.Millisecond)
	c := newCoarseClock(ticker.C, func() time.Duration { return time.Since(origin) }, ticker.Stop)
	runtime.AddCleanup(c, func(t *coarseTicker) { t.halt() }, c.coarseTicker)
	return c
}

// newCoarseClock builds a clock that samples read on every tick. Tests
// drive ticks by hand.
func newCoarseClock(ticks <-chan time.Time, read func() time.Duration, release func()) *CoarseClock {
	t := &coarseTicker{read: read, stop: make(chan struct{}), done: make(chan struct{})}
	t.now.Store(int64(read()))
	go func() {
		defer close(t.done)
		defer release()
		for {
			select {
			case <-ticks:
				// A Store, not a CompareAndSwap: read is monotonic, and the
				// goroutine is the only writer.
				t.now.Store(int64(t.read()))
			case <-t.stop:
				return
			}
		}
	}()
	return &CoarseClock{t}
}

// Now returns the latest stored reading: 0 for a nil or zero CoarseClock,
// which [NewCoarseClock] did not start and which never advances.
func (c *CoarseClock) Now() time.Duration {
	if c == nil || c.coarseTicker == nil {
		return 0
	}
	return time.Duration(c.now.Load())
}

// Stop ends the clock's goroutine and waits for it. Now keeps returning the
// last reading. Stop is idempotent.
func (c *CoarseClock) Stop() {
	if c == nil || c.coarseTicker == nil {
		return
	}
	c.halt()
	<-c.done
}

func (t *coarseTicker) halt() { t.once.Do(func() { close(t.stop) }) }
