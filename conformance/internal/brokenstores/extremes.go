package brokenstores

import (
	"time"

	"github.com/runlimit/runlimit/domain"
)

// unixOffset is where the eleventh hunt's faults that count time from the
// Unix epoch put the store's zero: the clock's zero is this Unix time, an
// odd number of microseconds past a whole second, as a real clock's start
// is as likely to be.
var unixOffset = domain.InstantFromTime(time.Date(2026, 12, 1, 17, 22, 40, 123_457_000, time.UTC))

// floatUnixMicros returns i as it comes back from a float64 of
// microseconds since the Unix epoch (FloatUnixMicroseconds,
// CapacityRetryFloatUnixMicros).
func floatUnixMicros(i domain.Instant) domain.Instant {
	return domain.Instant(float64(i+unixOffset)) - unixOffset
}

// floatUnixSeconds returns i as float64 seconds since the Unix epoch
// (DeadlineFloatUnixSeconds).
func floatUnixSeconds(i domain.Instant) float64 {
	return float64(i+unixOffset) / 1e6
}

// edgeClamp returns the time read now under a fault that clamps the clock
// by a rule of its own, and whether the fault applies.
func (s *Store) edgeClamp(now domain.Instant) (domain.Instant, bool) {
	const ms = domain.Instant(time.Millisecond / time.Microsecond)
	for {
		last := s.last.Load()
		behind := false
		switch s.cfg.Fault {
		case ClampToleratesJitter:
			// The defect: a step back of up to ten milliseconds is jitter.
			if int64(now) < last && last-int64(now) <= int64(10*ms) {
				return now, true
			}
			behind = int64(now) < last
		case ClampComparesMilliseconds:
			// The defect: behind only when in an earlier millisecond.
			behind = int64(now/ms) < last/int64(ms)
		default:
			return 0, false
		}
		if behind {
			return domain.Instant(last), true
		}
		if int64(now) <= last || s.last.CompareAndSwap(last, int64(now)) {
			return now, true
		}
	}
}
