package brokenstores

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// This file holds the faults of an adapter author who gets concurrency and
// cancellation subtly wrong (see fault.go).

// errAnsweredNothing is CancelledWaitAnswersNothing's way out of run: the
// single check answers no error and the zero decision.
var errAnsweredNothing = errors.New("brokenstores: gave up without an answer")

// errWaitAbandoned is CancelledWaitOwnError's error for a cancelled wait.
var errWaitAbandoned = errors.New("lock wait abandoned")

// racyClamp is ClampRacyReadModifyWrite's clock: the latest time is loaded,
// the clock read, and the larger stored, three steps another admission
// can come between.
func (s *Store) racyClamp() domain.Instant {
	last := domain.Instant(s.last.Load())
	now := max(domain.InstantOf(s.cfg.Clock()), last)
	// The defect: a racing admission may have stored a later time since
	// the load; this store puts the older one over it.
	s.last.Store(int64(now))
	return now
}

// runAnswering runs a single check's admission, or, with
// CancelledCheckGoesOn, runs it on a goroutine of its own and answers the
// caller as soon as its context ends, with the context's error, which
// says nothing was consumed, while the admission goes on.
func (a *admission) runAnswering() error {
	if a.s.cfg.Fault != CancelledCheckGoesOn {
		return a.run()
	}
	ctx := a.ctx
	a.ctx = context.WithoutCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.run() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// The defect: the admission goes on, and counts once the lock is
		// free.
		return &Error{Op: "admit", Err: ctx.Err()}
	}
}

// pollLock is how often a lock wait that watches its context tries the
// lock again.
const pollLock = time.Millisecond

// waitLock takes l, one of the key locks of an admission. The faults whose
// lock wait watches the context try it until it is free or the context
// ends, and then:
//   - CancelledWaitKeepsEarlierLocks gives up without releasing the locks
//     it already took;
//   - CancelledWaitDropsLockEntry releases them, and drops the lock table's
//     entry of the key it waited for, as if it were the lock's last user:
//     the next admission of that key makes a new lock and goes in while
//     the holder still decides.
func (a *admission) waitLock(l *sync.Mutex) error {
	s := a.s
	if s.cfg.Fault != CancelledWaitKeepsEarlierLocks && s.cfg.Fault != CancelledWaitDropsLockEntry {
		l.Lock()
		return nil
	}
	t := time.NewTicker(pollLock)
	defer t.Stop()
	for !l.TryLock() {
		select {
		case <-a.ctx.Done():
			if s.cfg.Fault == CancelledWaitDropsLockEntry {
				for _, h := range a.held {
					h.Unlock()
				}
				a.held = a.held[:0]
				s.keyMu.Lock()
				for k, m := range s.keyLocks {
					if m == l {
						// The defect: the lock another admission holds is
						// dropped with the entry.
						delete(s.keyLocks, k)
					}
				}
				s.keyMu.Unlock()
			}
			// CancelledWaitKeepsEarlierLocks's defect: a.held stays locked.
			return a.ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// afterLockWait looks at the context once every lock of the admission is
// held, for the faults that give up there when it ended during the wait:
//   - CancelledWaitKeepsLocks returns the context's error without
//     releasing the locks;
//   - CancelledWaitAnswersNothing (single checks) releases them and
//     answers no error and the zero decision;
//   - CancelledWaitOwnError releases them and answers an error of its own
//     that does not match the context's.
func (a *admission) afterLockWait() error {
	err := a.ctx.Err()
	if err == nil {
		return nil
	}
	switch a.s.cfg.Fault {
	case CancelledWaitKeepsLocks:
		// The defect: the locks stay taken.
		return &Error{Op: "admit", Err: err}
	case CancelledWaitAnswersNothing:
		if a.single {
			a.unlock()
			return errAnsweredNothing
		}
	case CancelledWaitOwnError:
		a.unlock()
		return &Error{Op: "admit", Err: errWaitAbandoned}
	}
	return nil
}
