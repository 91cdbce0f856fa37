package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// settleTimeout bounds the store's own clean-up once the caller has gone or
// the operation failed: the wait for the round trip the server was
// cancelling (once the cancel request is settled; see cancelAckTimeout),
// and the rollback. A connection that cannot settle
// within it is in a state no one knows, and is closed.
const settleTimeout = 250 * time.Millisecond

// cancelAckTimeout bounds the wait for the server to acknowledge a cancel
// request. The server forks a process to read each request, which a loaded
// machine can take hundreds of milliseconds to run; a request that goes
// unacknowledged may still cancel a later statement, so its connection is
// closed, and the next caller pays for a new one's connect and warm-up.
// The wait costs nothing while the server is quick.
const cancelAckTimeout = time.Second

// cancelDelay is how long a round trip whose caller gave up may go on
// before the server is asked to cancel it. The server's own statement and
// lock timeouts, set from the caller's deadline, usually end it first.
const cancelDelay = 10 * time.Millisecond

// A session is one operation's hold on a pooled connection.
//
// The caller's deadline or cancellation must not cost the pool its
// connection: a connection closed mid-operation is replaced by a new one
// that must connect, prepare and warm up before it can serve, and under
// deadlines tighter than that, no replacement ever would. So the wire work
// runs under a context of the store's own (the operation's budget, which the
// caller cannot end), in a goroutine of its own when the caller has a
// deadline (see drive). Such a caller waits for it until its deadline, then
// leaves with a timeout: quota was not consumed unless COMMIT had been
// sent. When the caller gives up, the session asks the server to cancel the
// statement it is running (a cancel request) if it is still running a
// moment later, waits briefly for the answer, rolls back and returns the
// connection to the pool. It closes the connection only when its state is
// unknown: the cancel request could not be delivered (it might still strike
// a later statement), the server did not answer in time, or the connection
// broke.
//
// No message is sent on the connection while a cancel request is on its
// way: a cancel that arrived after the statement it meant would strike the
// next one. Once the server has acknowledged the cancel request, the signal
// is either spent on the statement it meant or dropped when the server next
// reads a command, before it runs anything sent afterwards.
type session struct {
	conn *pgxpool.Conn
	pc   *pgconn.PgConn
	// ctx is the operation's budget; the caller's cancellation does not
	// reach it. Every driver call of the operation uses it.
	ctx    context.Context
	cancel context.CancelFunc
	// wait is when the operation must end for the caller: the caller's
	// deadline or the budget's, whichever is first. Statement and lock
	// timeouts are set from it; the idle-in-transaction timeout, which ends
	// the server session, from the budget.
	wait   time.Time
	budget time.Time
	// strike is the earliest instant at which the server's statement and
	// lock timeouts, set from the caller's deadline, can end a statement;
	// zero when the budget ends first and sets them (see blame).
	strike time.Time

	// inline: the caller runs the work itself (see drive); callbacks
	// counts its context's callback while it may run.
	inline    bool
	callbacks sync.WaitGroup
	// bg counts the store's goroutines: the work's, when it runs on one,
	// and its cancel request's.
	bg *background

	mu        sync.Mutex
	step      string        // OpAcquire while warming up, OpLock, then OpCommit once COMMIT is sent
	inFlight  bool          // a round trip is waiting for the server's answer
	left      bool          // the caller gave up
	leftStep  string        // the step when the caller gave up
	exited    bool          // the work is over and its results written
	panicked  any           // the value the work panicked with, which drive raises again
	returned  bool          // the connection went back to the pool, or was closed
	lost      bool          // the connection's state is unknown: close it
	cancelled chan struct{} // closed once the cancel request is settled; nil if none
	answered  chan struct{} // closed when the cancelled round trip ends
	done      chan struct{} // one token when the work exits, unless the caller left
}

// open starts a session on conn for a caller whose context is caller, for
// a store whose goroutines bg counts. A session is reused through the
// admissions' pool: open resets it.
func (ss *session) open(caller context.Context, conn *pgxpool.Conn, budget time.Duration, bg *background) {
	ss.conn, ss.pc, ss.bg = conn, conn.Conn().PgConn(), bg
	ss.step = OpLock
	ss.inFlight, ss.left, ss.exited, ss.lost, ss.inline, ss.returned = false, false, false, false, false, false
	ss.panicked = nil
	ss.leftStep = ""
	ss.cancelled, ss.answered = nil, nil
	if ss.done == nil {
		ss.done = make(chan struct{}, 1)
	}
	ss.setBudget(caller, budget)
}

// addTimeouts adds the transaction's timeout settings to p: statements and
// lock waits end by the caller's deadline, idle gaps by the budget.
func (ss *session) addTimeouts(p *params) { p.addTimeouts(ss.wait, ss.budget) }

// addLockTimeout adds the lock timeout alone to p, ending by the caller's
// deadline.
func (ss *session) addLockTimeout(p *params) { p.addLockTimeout(ss.wait) }

// setBudget starts the operation's budget, now.
func (ss *session) setBudget(caller context.Context, budget time.Duration) {
	if ss.cancel != nil {
		ss.cancel()
	}
	ss.budget = time.Now().Add(budget)
	ss.ctx, ss.cancel = context.WithDeadline(context.WithoutCancel(caller), ss.budget)
	ss.wait = ss.budget
	ss.strike = time.Time{}
	if d, ok := caller.Deadline(); ok && d.Before(ss.wait) {
		ss.wait = d
		// Timeouts set later are set closer to the deadline, with a
		// smaller margin: none strikes before this.
		ss.strike = d.Add(-serverTimeoutMargin(time.Until(d)))
	}
}

// blame is the one rule that tells a caller its deadline ended the
// operation when the server did it for the caller: a statement or lock
// timeout of the server, set from the caller's deadline (see
// addTimeouts), that struck once it could have, makes err, the
// operation's [*AdmissionError] or [*MaintenanceError], match
// context.DeadlineExceeded, as the caller's own context would have had it
// waited the margin out. A cancel request of someone else's that struck
// earlier, or a timeout that the store's budget set, is left as it is.
// A caller who left gets its context's error anyway (see leftError).
func (ss *session) blame(err error) error {
	if ss.strike.IsZero() || time.Now().Before(ss.strike) {
		return err
	}
	var cause *error
	switch e := err.(type) {
	case *AdmissionError:
		cause = &e.Err
	case *MaintenanceError:
		cause = &e.Err
	default:
		return err
	}
	var dbErr *DatabaseError
	switch {
	case !errors.As(*cause, &dbErr) || !dbErr.ServerTimeout():
	case *cause == error(dbErr):
		*cause = dbErr.ByDeadline()
	default:
		// A migrations check's error, which wraps the server's.
		*cause = &deadlineError{*cause}
	}
	return err
}

// deadlineError is an error that wraps a server timeout a caller's
// deadline set (see blame), and so matches context.DeadlineExceeded too.
type deadlineError struct{ err error }

func (e *deadlineError) Error() string   { return e.err.Error() }
func (e *deadlineError) Unwrap() []error { return []error{e.err, context.DeadlineExceeded} }

// outcome is how a session's work ended for its caller.
type outcome struct {
	// left: the caller gave up before the work was over.
	left bool
	// detached: the caller was answered without the work's results, and
	// the work owns everything it uses and releases it itself.
	detached bool
	// step and committing say how far the work had got when the caller
	// left: the step, and whether COMMIT had been sent.
	step       string
	committing bool
}

// drive runs work, which must end with exit, for a caller whose context is
// caller.
//
// A caller with a deadline is promised an answer by then: the work runs in
// a goroutine of its own, and the caller leaves it at the deadline
// (detached). A caller whose context can only be cancelled runs the work
// itself, as does one whose context cannot end at all: a cancellation asks
// the server to stop, and the caller gets its answer once it has, a moment
// later (the work's own results, or its error as the caller's). Nobody waits
// for the answer of a cancelled request; a goroutine per admission would
// cost every admission for them.
func (ss *session) drive(caller context.Context, work func()) outcome {
	if caller.Done() == nil {
		ss.run(work)
		<-ss.done
		ss.repanic()
		return outcome{}
	}
	if _, ok := caller.Deadline(); !ok {
		ss.inline = true
		ss.callbacks.Add(1)
		stop := context.AfterFunc(caller, func() {
			defer ss.callbacks.Done()
			ss.leave()
		})
		ss.run(work)
		if stop() {
			ss.callbacks.Done()
		}
		// The session is reused once this returns: a callback that has
		// started must be over.
		ss.callbacks.Wait()
		<-ss.done
		ss.repanic()
		ss.mu.Lock()
		defer ss.mu.Unlock()
		return outcome{left: ss.left, step: ss.leftStep, committing: ss.leftStep == OpCommit}
	}
	ss.bg.add(false)
	go detach(ss.bg, ss, work)
	select {
	case <-ss.done:
		ss.repanic()
		return outcome{}
	case <-caller.Done():
	}
	if step, committing, ok := ss.leave(); ok {
		return outcome{left: true, detached: true, step: step, committing: committing}
	}
	// The work exited as the caller gave up: its results stand.
	<-ss.done
	ss.repanic()
	return outcome{}
}

// detach runs work for ss on a goroutine of its own, which bg counts
// until work has exited. Once work has exited it reads nothing of the
// session, which its caller may reuse then.
func detach(bg *background, ss *session, work func()) {
	defer bg.done()
	ss.run(work)
}

// leave records that the caller gave up, unless the work has already
// exited (ok false). A round trip in flight is cancelled on the server.
func (ss *session) leave() (step string, committing bool, ok bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.exited {
		return "", false, false
	}
	ss.left, ss.leftStep = true, ss.step
	if ss.inFlight && ss.step != OpAcquire {
		// Warming up is never cancelled: it is what lets the connection
		// serve the next caller in time.
		ss.cancelled, ss.answered = make(chan struct{}), make(chan struct{})
		ss.bg.add(false)
		go ss.cancelOnServer(ss.pc, ss.cancel, ss.cancelled, ss.answered)
	}
	return ss.step, ss.step == OpCommit, true
}

// cancelOnServer asks the server to cancel the statement pc is running,
// unless the round trip ends within cancelDelay, waits up to
// cancelAckTimeout for the request's acknowledgement, then gives the round
// trip settleTimeout to end before giving up on the connection. It closes
// cancelled when done; the work waits for that before it sends anything
// more.
func (ss *session) cancelOnServer(pc *pgconn.PgConn, kill context.CancelFunc, cancelled, answered chan struct{}) {
	defer ss.bg.done()
	defer close(cancelled)
	timer := time.NewTimer(cancelDelay)
	defer timer.Stop()
	select {
	case <-answered:
		// Most late answers are only late: a cancel request would cost the
		// server a connection of its own for nothing.
		return
	case <-timer.C:
	}
	ctx, cancel := context.WithTimeout(context.Background(), cancelAckTimeout)
	unacknowledged := !sendCancel(ctx, pc) || ctx.Err() != nil
	cancel()
	if unacknowledged {
		// The request may still reach the server and cancel a later
		// statement on this connection: another caller's. The driver
		// reports a request whose acknowledgement it stopped waiting for
		// when ctx ended as sent, without error; only the server closing
		// the request's connection before then says that it acted on it.
		ss.setLost()
	}
	timer.Reset(settleTimeout)
	select {
	case <-answered:
	case <-timer.C:
		// The server has not answered: ending the budget makes the driver
		// close the connection, which ends the round trip.
		ss.setLost()
		kill()
	}
}

// sendCancel sends pc's cancel request and reports whether the driver
// saw no error. The request goes on a connection of its own, which the
// host's DialFunc makes: a panic of the host's code there ends here, as a
// request not acknowledged. No caller waits on this goroutine, and a
// panic on it would end the host's process.
func sendCancel(ctx context.Context, pc *pgconn.PgConn) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return pc.CancelRequest(ctx) == nil
}

func (ss *session) setLost() {
	ss.mu.Lock()
	ss.lost = true
	ss.mu.Unlock()
}

// warming marks the work as preparing the connection, which no caller
// cancels.
func (ss *session) warming() {
	ss.mu.Lock()
	ss.step, ss.inFlight = OpAcquire, true
	ss.mu.Unlock()
}

// warmed ends warming, which ok says succeeded; it reports false when the
// caller has left meanwhile. A failed warm-up stays the session's step, so
// that a caller who leaves as the work returns its error leaves at it.
func (ss *session) warmed(ok bool) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.inFlight = false
	if ok {
		ss.step = OpLock
	}
	return !ss.left
}

// send marks a round trip in flight, the one carrying COMMIT when commit is
// set, unless the caller has left: then nothing may be sent, and send
// returns false.
func (ss *session) send(commit bool) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.left {
		return false
	}
	ss.inFlight = true
	if commit {
		ss.step = OpCommit
	}
	return true
}

// nothingCommitted records that the round trip carrying an implicit
// COMMIT, whose answer has been read in full, committed nothing: the
// optimistic protocol's conditional write applied to no row. The work is
// back where a round trip 1 leaves it, so a caller who leaves from here
// on, while the check starts again or falls back to the locked protocol,
// consumed nothing.
func (ss *session) nothingCommitted() {
	ss.mu.Lock()
	ss.step = OpLock
	ss.mu.Unlock()
}

// received ends the round trip that send started. If the caller left and a
// cancel request went out meanwhile, it waits until that request is
// settled.
func (ss *session) received() {
	ss.mu.Lock()
	ss.inFlight = false
	answered, cancelled := ss.answered, ss.cancelled
	ss.mu.Unlock()
	if answered != nil {
		close(answered)
		<-cancelled
	}
}

// hold locks the session while the work touches what the caller owns (its
// batch): it reports false, unlocked, when the caller has left. release
// unlocks.
func (ss *session) hold() bool {
	ss.mu.Lock()
	if ss.left {
		ss.mu.Unlock()
		return false
	}
	return true
}

func (ss *session) release() { ss.mu.Unlock() }

// exit ends the work: the connection goes back to the pool, rolled back, or
// is closed, and the caller, if still waiting, is told. It reports whether
// the caller was answered without the work, which then owns its memory.
func (ss *session) exit() (detached bool) {
	ss.finish()
	ss.mu.Lock()
	ss.exited = true
	detached = ss.left && !ss.inline
	ss.mu.Unlock()
	if !detached {
		ss.done <- struct{}{}
	}
	return detached
}

// forget marks the connection's state unknown after err when err says the
// connection's prepared statements are gone or no longer fit the schema.
func (ss *session) forget(err error) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == sqlstateNoSuchStatement || pgErr.Code == sqlstatePlanChanged) {
		ss.setLost()
	}
}

// finish gives the connection back to the pool once its transaction is
// over, rolling back one that is still open, or closes it when it cannot be
// trusted: its state is unknown, it is broken or mid-message, or the
// rollback failed.
func (ss *session) finish() {
	defer ss.cancel()
	ss.mu.Lock()
	lost := ss.lost
	ss.mu.Unlock()
	pc := ss.pc
	keep := false
	switch {
	case lost || pc.IsClosed() || pc.IsBusy():
	case pc.TxStatus() == 'I':
		keep = true
	default:
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ss.ctx), settleTimeout)
		defer cancel()
		_, err := pc.Exec(ctx, sqlRollback).ReadAll()
		keep = err == nil && pc.TxStatus() == 'I'
	}
	// Returned before it is handed over: the pool's release tracer and
	// the connection's Close are the host's code, and a panic there comes
	// once the connection has left the session's hands.
	ss.returned = true
	if keep {
		ss.conn.Release()
	} else {
		discard(ss.conn)
	}
}

// run runs work, which must end with exit. A panic in it, such as one of
// a host's code that the driver calls on the store's connection (the
// connection its DialFunc made, a notice handler, a tracer), leaves the
// connection in a state no one knows: run closes it and ends the work as
// exit would, and drive raises the panic again on the caller's goroutine,
// where a store's panics reach the caller. A caller who has left by then
// is not told: the panic ends with the work. Without this, the
// connection stayed out of the pool for good (a pool that loses every
// connection so serves no one), and a panic on the goroutine of a
// caller with a deadline ended the host's process.
func (ss *session) run(work func()) {
	defer func() {
		if v := recover(); v != nil {
			ss.recovered(v)
		}
	}()
	work()
}

// recovered ends the work after its panic v.
func (ss *session) recovered(v any) {
	ss.mu.Lock()
	exited := ss.exited
	ss.mu.Unlock()
	if exited {
		// The work had exited, and its caller has its answer: the panic
		// is not the connection's.
		panic(v)
	}
	if !ss.returned {
		ss.returned = true
		discardAfterPanic(ss.conn)
	}
	ss.cancel()
	ss.mu.Lock()
	ss.exited, ss.panicked = true, v
	detached := ss.left && !ss.inline
	ss.mu.Unlock()
	if !detached {
		ss.done <- struct{}{}
	}
}

// repanic raises again, on the caller's goroutine, the panic of the work
// that run recovered, if any.
func (ss *session) repanic() {
	ss.mu.Lock()
	v := ss.panicked
	ss.panicked = nil
	ss.mu.Unlock()
	if v != nil {
		panic(v)
	}
}

// discardAfterPanic is discard for a connection a panic met: a second
// panic of the host's code as the connection closes (its net.Conn's
// Close) ends here, so that the first is the one that goes on.
func discardAfterPanic(conn *pgxpool.Conn) {
	defer func() { _ = recover() }()
	discard(conn)
}

// discard takes conn out of the pool and closes it. The server rolls back
// whatever transaction the connection had open.
func discard(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	_ = conn.Hijack().Close(ctx)
}

// leftError is the error of an admission whose caller gave up: its
// context's error, timed out or cancelled, at the step the work had reached,
// consumed only if COMMIT had been sent.
func leftError(caller context.Context, o outcome) *AdmissionError {
	err := caller.Err()
	return &AdmissionError{Op: o.step, MayHaveConsumed: mayHaveCommitted(leftStage(o.committing), err),
		Timeout: errors.Is(err, context.DeadlineExceeded), Err: err}
}
