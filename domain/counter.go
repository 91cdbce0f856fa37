package domain

// Counter is the stored state of one anchored window: Used units consumed in
// [Start, Expires). The zero value is an absent counter; a stored counter
// always has Used > 0.
type Counter struct {
	Used    int64
	Start   Instant
	Expires Instant
}

// Present reports whether c is a stored counter rather than an absent one.
func (c Counter) Present() bool { return c.Used > 0 }

// Active reports whether c is a stored window that has not expired at now.
// The window is half-open: it has expired exactly at Expires.
func (c Counter) Active(now Instant) bool { return c.Used > 0 && now < c.Expires }

// Observation is what a store read for one key under its locks, before
// evaluation.
type Observation struct {
	// Counter is the stored state, or the zero Counter when the key is absent.
	Counter Counter
	// Full reports that an absent key cannot get a storage slot: its
	// partition is full of other keys, counting the slots the batch's
	// earlier new keys in that partition would take. Ignored for a present
	// key, which renews in place.
	Full bool
	// EarliestExpiry, when HasEarliestExpiry is set, is the earliest known
	// expiry in the full partition: the time to retry a capacity denial.
	EarliestExpiry    Instant
	HasEarliestExpiry bool
}
