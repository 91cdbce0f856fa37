package brokenstores

import "github.com/runlimit/runlimit/domain"

// restamp is StampsWithSecondClockRead's write of c, a counter the
// admission decided at now: a window it anchored (a new key, or an ended
// window renewed) is stamped with a second clock read instead of now.
func (s *Store) restamp(c domain.Counter, before domain.Counter, present bool, now domain.Instant) domain.Counter {
	if c.Start != now || present && before.Active(now) {
		return c
	}
	w := c.Expires.Sub(c.Start)
	// The defect: the clock is read again for the write.
	c.Start = s.clampedNow()
	c.Expires = c.Start.Add(w)
	return c
}
