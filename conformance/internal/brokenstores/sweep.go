package brokenstores

import "github.com/runlimit/runlimit/domain"

// sweepFault reports whether the fault is one of the per-check cleanup
// defects of this file, which clean on each check even when the
// configuration asks for no per-check cleanup.
func (s *Store) sweepFault() bool {
	return s.cfg.Fault == SweepSparesWindowEndingNow || s.cfg.Fault == SweepsFirstCheckOnly
}

// sweepExpired is SweepSparesWindowEndingNow's test of whether c has ended
// at now. perCheck is set for the cleanup of a check on its way; CleanupExpired
// keeps the right boundary, so only the admission's sweep shows the defect.
func sweepExpired(c domain.Counter, now domain.Instant, perCheck bool) bool {
	if perCheck {
		// The defect: a window ending exactly now is taken as running.
		return c.Expires < now
	}
	return c.Expires <= now
}

// sweptKeys returns the keys of an admission whose partitions a check
// cleans on its way: every key, or under SweepsFirstCheckOnly the first
// alone.
func (s *Store) sweptKeys(keys []domain.CounterKey) []domain.CounterKey {
	if s.cfg.Fault == SweepsFirstCheckOnly && len(keys) > 1 {
		// The defect: the batch's later checks free no slot on their
		// partitions.
		return keys[:1]
	}
	return keys
}
