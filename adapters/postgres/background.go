package postgres

import (
	"context"
	"sync"
)

// background counts the calls in flight and the goroutines a store runs
// beside its callers, which [Store.Close] waits for: the work of a caller who left at its deadline
// (see session.drive), which still rolls back and gives its connection
// back, and the warm-up of idle connections (see warmIdle). A host that
// closes its pool, or checks for leaked goroutines, once Close has
// returned then meets none of them.
//
// Every such goroutine ends within the store's own budgets: a detached
// caller's work within settleTimeout, cancelAckTimeout and cancelDelay of
// the round trip it was in (a warm-up, which is never cancelled, within
// OperationTimeout), and a warm-up of idle connections within
// OperationTimeout per connection, of which Close lets it finish only the
// one in progress.
type background struct {
	mu      sync.Mutex
	idle    sync.Cond // signalled when running drops to 0
	running int
	closed  bool

	// ctx ends when the store closes: waits that serve only later
	// callers (warmIdle's wait for a connection) end with it.
	ctx    context.Context
	cancel context.CancelFunc
}

func (b *background) init() {
	b.idle.L = &b.mu
	b.ctx, b.cancel = context.WithCancel(context.Background())
}

// add counts a goroutine about to start, which must call done when it
// ends. An optional one, which serves only later callers, is refused
// (add reports false) once the store is closing; a caller's work never
// is, as its caller is still in flight.
func (b *background) add(optional bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if optional && b.closed {
		return false
	}
	b.running++
	return true
}

// enter counts a call of the store's (an admission, a cleanup, a stats
// or readiness read) from the moment it has passed its checks of the
// input until it returns, so that Close also waits for a call that had
// not started any goroutine yet when Close began: without it, a call
// that found the store open just before Close could still start its work
// goroutine, or take a connection of the host's pool, after Close had
// returned. It reports false, counting nothing, once the store is
// closing; the caller then fails with ErrClosed. A call that entered
// calls done when it returns.
func (b *background) enter() bool { return b.add(true) }

// done ends a goroutine that add counted, or a call that entered.
func (b *background) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running--
	if b.running == 0 {
		b.idle.Broadcast()
	}
}

// stopping reports whether the store is closing.
func (b *background) stopping() bool { return b.ctx.Err() != nil }

// close stops the optional work and waits until no goroutine of the store
// runs.
func (b *background) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.cancel()
	for b.running > 0 {
		b.idle.Wait()
	}
}
