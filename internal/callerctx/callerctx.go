// Package callerctx keeps a caller's deadline and cancellation on a
// context that an observer chose: the context a ContextObserver's
// StartAdmission or a CleanupObserver's StartCleanup returns is the one
// the store is called with, and one that is not derived from the
// caller's (a span started from context.Background(), say) must not free
// the store's call from the caller's deadline, nor from a shutdown's
// cancellation.
package callerctx

import (
	"context"
	"time"
)

// Bind returns a context with chosen's values that ends when caller or
// chosen does, with the earlier of their deadlines, and the function that
// releases it once the call it serves has returned. When chosen already
// ends with caller (it is caller, or shares its Done channel, as a
// context.WithValue child does), or caller never ends, chosen itself is
// returned with a release that does nothing, at no cost.
func Bind(caller, chosen context.Context) (context.Context, func()) {
	done := caller.Done()
	if chosen == caller || done == nil || chosen.Done() == done {
		return chosen, nop
	}
	merged, cancel := context.WithCancelCause(chosen)
	if caller.Err() != nil {
		// Ended already: the store must see it at once, not once the
		// AfterFunc's goroutine has run.
		cancel(context.Cause(caller))
	}
	stop := context.AfterFunc(caller, func() { cancel(context.Cause(caller)) })
	b := &bound{Context: merged, caller: caller}
	return b, func() {
		stop()
		cancel(context.Canceled)
	}
}

func nop() {}

// bound is the merged context, whose Err and Deadline are the caller's
// when the caller ended it: a caller's deadline stays a
// context.DeadlineExceeded, which stores read as a timeout.
type bound struct {
	context.Context // chosen, cancelled when caller is
	caller          context.Context
}

// Deadline returns the earlier of the two deadlines.
func (b *bound) Deadline() (time.Time, bool) {
	d, ok := b.Context.Deadline()
	if cd, cok := b.caller.Deadline(); cok && (!ok || cd.Before(d)) {
		return cd, true
	}
	return d, ok
}

// Err returns the caller's error once the caller has ended, else chosen's.
func (b *bound) Err() error {
	if err := b.caller.Err(); err != nil {
		return err
	}
	return b.Context.Err()
}
