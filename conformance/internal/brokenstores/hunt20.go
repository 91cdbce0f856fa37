package brokenstores

import (
	"bytes"
	"slices"

	"github.com/runlimit/runlimit/domain"
)

// This file holds the faults of a SQL store's author (see fault.go).

// sortBySubjectKey is LockOrderBySubjectKey's lock order: the subject key
// alone, the caller's order among keys that share one.
func sortBySubjectKey(order []domain.CounterKey) {
	slices.SortStableFunc(order, func(x, y domain.CounterKey) int {
		// The defect: the fingerprint, the key's first half, is left out.
		sx, sy := x.SubjectKey().Bytes(), y.SubjectKey().Bytes()
		return bytes.Compare(sx[:], sy[:])
	})
}

// sampleBeforeLocks is ClampedClockBeforeLocks's clock read: the store's
// clamped time, taken before any lock, which admission.clock then hands
// back in place of a read with the locks held.
func (a *admission) sampleBeforeLocks() {
	if a.s.cfg.Fault == ClampedClockBeforeLocks || a.s.cfg.Fault == ClockMutexBeforeLocks {
		// The defect: the time is taken before the locks, and kept.
		a.sampled = a.s.now()
	}
}
