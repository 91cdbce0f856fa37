package domain

import (
	"math"
	"time"
)

// Instant is a point on a store's timeline, in whole microseconds since an
// epoch the store chooses (the memory store: its own start; PostgreSQL: the
// Unix epoch). Microseconds hold both stores' precision exactly and keep
// now+MaxWindow far from overflow.
type Instant int64

// InstantOf converts a duration since the store's epoch, truncating toward
// the earlier microsecond.
func InstantOf(sinceEpoch time.Duration) Instant {
	micros := sinceEpoch / time.Microsecond
	if sinceEpoch%time.Microsecond < 0 {
		// Division truncates toward zero, which is the later microsecond
		// before the epoch.
		micros--
	}
	return Instant(micros)
}

// InstantFromTime converts a wall-clock time to microseconds since the Unix
// epoch.
func InstantFromTime(t time.Time) Instant { return Instant(t.UnixMicro()) }

// Time converts an instant measured from the Unix epoch back to a time.
func (i Instant) Time() time.Time { return time.UnixMicro(int64(i)) }

// Add returns i+d, truncated to the microsecond and saturating at the ends of
// the int64 range.
func (i Instant) Add(d time.Duration) Instant {
	step := int64(d / time.Microsecond)
	switch {
	case step > 0 && int64(i) > math.MaxInt64-step:
		return Instant(math.MaxInt64)
	case step < 0 && int64(i) < math.MinInt64-step:
		return Instant(math.MinInt64)
	}
	return Instant(int64(i) + step)
}

// Sub returns i-j as a duration, saturating at the ends of the Duration range.
func (i Instant) Sub(j Instant) time.Duration {
	const maxMicros = math.MaxInt64 / int64(time.Microsecond)
	a, b := int64(i), int64(j)
	switch {
	case b < 0 && a > math.MaxInt64+b:
		return time.Duration(math.MaxInt64)
	case b > 0 && a < math.MinInt64+b:
		return time.Duration(math.MinInt64)
	}
	diff := a - b
	switch {
	case diff > maxMicros:
		return time.Duration(math.MaxInt64)
	case diff < -maxMicros:
		return time.Duration(math.MinInt64)
	}
	return time.Duration(diff) * time.Microsecond
}
