package brokenstores

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// errUnhealthy is ReadyStickyAfterCancel's answer once a call was refused.
var errUnhealthy = errors.New("an earlier call was cancelled")

// lifecycle is the state of the faults around failed calls: the last
// report Stats returned (StatsCachedAfterClose), the slots reserved by
// admissions refused for their context (StatsCountRefusedAdmission), and
// whether a call was refused for its context (ReadyStickyAfterCancel).
type lifecycle struct {
	lcMu       sync.Mutex
	lastReport ports.Stats
	reserved   map[int]int64
	refused    bool
}

// refusedForContext records an admission of k refused because ctx is done,
// before the store returns its error.
func (s *Store) refusedForContext(k domain.CounterKey) {
	switch s.cfg.Fault {
	case StatsCountRefusedAdmission:
		// The defect: a new key's slot is reserved before the context is
		// looked at, and the error path never gives it back.
		s.mu.Lock()
		_, stored := s.entries[k]
		s.mu.Unlock()
		if stored {
			return
		}
		s.lcMu.Lock()
		if s.reserved == nil {
			s.reserved = make(map[int]int64)
		}
		s.reserved[s.PartitionOf(k)]++
		s.lcMu.Unlock()
	case ReadyStickyAfterCancel:
		// The defect: a cancelled call marks the store unhealthy, and
		// nothing clears the mark.
		s.lcMu.Lock()
		s.refused = true
		s.lcMu.Unlock()
	}
}

// statsBefore answers Stats before the store reads its counters: an error
// (and the report beside it) when the fault answers first, or ok to go on.
func (s *Store) statsBefore(ctx context.Context) (ports.Stats, error, bool) {
	switch {
	case s.cfg.Fault == StatsContextBeforeClosed && ctx != nil && ctx.Err() != nil:
		// The defect: the context is looked at before the store's state.
		return ports.Stats{}, &Error{Op: "stats", Err: ctx.Err()}, true
	case s.cfg.Fault == StatsClosedBeforeNilContext && s.closed.Load():
		// The defect: the store's state is looked at before the caller's
		// mistake.
		return ports.Stats{}, &Error{Op: "stats", Err: ports.ErrClosed}, true
	case s.cfg.Fault == StatsCachedAfterClose && s.closed.Load():
		// The defect: Close keeps the last report, and Stats serves it
		// beside the closed error.
		s.lcMu.Lock()
		defer s.lcMu.Unlock()
		return s.lastReport, &Error{Op: "stats", Err: ports.ErrClosed}, true
	}
	return ports.Stats{}, nil, false
}

// statsAfter finishes a report st of an open store.
func (s *Store) statsAfter(ctx context.Context, st ports.Stats) (ports.Stats, error) {
	switch s.cfg.Fault {
	case StatsCachedAfterClose:
		s.lcMu.Lock()
		s.lastReport = st
		s.lastReport.Headroom = slices.Clone(st.Headroom)
		s.lcMu.Unlock()
	case StatsBesideContextError:
		// The defect: the context is looked at once the report is built,
		// and the report goes back with its error.
		if ctx != nil && ctx.Err() != nil {
			return st, &Error{Op: "stats", Err: ctx.Err()}
		}
	case StatsCountRefusedAdmission:
		s.lcMu.Lock()
		for p, n := range s.reserved {
			st.Entries += n
			st.Headroom[p] -= n
		}
		s.lcMu.Unlock()
	}
	return st, nil
}

// readyBefore answers Ready when the fault answers before the store's own
// checks, with ok set.
func (s *Store) readyBefore(ctx context.Context) (error, bool) {
	switch s.cfg.Fault {
	case ReadyNilContextNil:
		// The defect: a nil context is taken for "no deadline".
		if ctx == nil {
			return nil, true
		}
	case ReadyContextBeforeClosed:
		if ctx != nil && ctx.Err() != nil {
			return &Error{Op: "ready", Err: ctx.Err()}, true
		}
	case ReadyIgnoresDoneContext:
		// The defect: nothing to ask a backend, so no context to look at.
		if ctx != nil && !s.closed.Load() {
			return nil, true
		}
	case ReadyStickyAfterCancel:
		s.lcMu.Lock()
		refused := s.refused
		s.lcMu.Unlock()
		if refused && ctx != nil && !s.closed.Load() {
			return &Error{Op: "ready", Err: errUnhealthy}, true
		}
	}
	return nil, false
}

// cleanupInRounds is CleanupExpired for CleanupCutShortReportsNone: it
// removes one counter a round, each round with its own clock read, and
// answers a context that ends between rounds with (0, ctx.Err()), losing
// the count of what the earlier rounds removed.
func (s *Store) cleanupInRounds(ctx context.Context, max int) (int, error) {
	removed := 0
	for removed < max {
		if err := ctx.Err(); err != nil {
			return 0, &Error{Op: "cleanup", Err: err}
		}
		now := s.now()
		s.mu.Lock()
		n := s.removeExpired(-1, now, 1, nil)
		s.mu.Unlock()
		if n == 0 {
			break
		}
		removed += n
	}
	return removed, nil
}
