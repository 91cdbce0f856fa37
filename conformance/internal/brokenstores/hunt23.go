package brokenstores

import (
	"github.com/runlimit/runlimit/domain"
)

// This file holds the faults of the twenty-third blind hunt: an adapter
// author who wrote the store without reading the suite (see fault.go).

// slideBatchRenewal is BatchRenewalSlides's write of check i: a batch of
// two or more checks moves the end of an active window it counts to a
// window after now, as a batch script that calls PEXPIRE on every key it
// counts does, where the single-key path keeps the end it was anchored
// with (PEXPIREAT on creation only).
func (a *admission) slideBatchRenewal(i int, c domain.Counter, now domain.Instant) domain.Counter {
	if a.s.cfg.Fault != BatchRenewalSlides || a.n < 2 || !a.present[i] || !a.before[i].Active(now) {
		return c
	}
	w := c.Expires.Sub(c.Start)
	c.Start, c.Expires = now, now.Add(w)
	return c
}

// clockUnderStoreMutex reports whether the store reads its clock under
// its store-wide clock mutex: CleanupHoldsClockLock, and
// ClockMutexBeforeLocks, whose admissions take that mutex, read and clamp
// the clock and let it go before they take their locks, while its
// cleanup takes a partition's lock first and then reads the clock through
// the same mutex.
func (s *Store) clockUnderStoreMutex() bool {
	return s.cfg.Fault == CleanupHoldsClockLock || s.cfg.Fault == ClockMutexBeforeLocks
}
