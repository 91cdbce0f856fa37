package brokenstores

import (
	"encoding/json"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// encode returns the counter as the store keeps it: c itself, or what a
// fault's representation makes of it. before and present are what the
// check read; now is the admission's time.
func (s *Store) encode(c domain.Counter, before domain.Counter, present bool, now domain.Instant) domain.Counter {
	w := c.Expires.Sub(c.Start)
	switch s.cfg.Fault {
	case SlidesWindow:
		c.Start, c.Expires = now, now.Add(w)
	case StampsWithSecondClockRead:
		c = s.restamp(c, before, present, now)
	case RenewsAtOldEnd:
		if present && !before.Active(now) {
			c.Start = before.Expires
			c.Expires = c.Start.Add(w)
		}
	case StoresMilliseconds:
		c.Start, c.Expires = truncate(c.Start, time.Millisecond), truncate(c.Expires, time.Millisecond)
	case StoresSeconds:
		c.Start, c.Expires = truncate(c.Start, time.Second), truncate(c.Expires, time.Second)
	case FloatCounts:
		c.Used = int64(float64(c.Used))
	case Int32Counts:
		c.Used = int64(int32(c.Used))
	case FloatMicroseconds:
		c.Start = domain.Instant(float64(c.Start))
		c.Expires = domain.Instant(float64(c.Expires))
	case FloatUnixMicroseconds:
		c.Start, c.Expires = floatUnixMicros(c.Start), floatUnixMicros(c.Expires)
	case JSONRoundTrip:
		c = jsonRoundTrip(c)
	case EpochAlignedWindows:
		if fresh := !present || !before.Active(now); fresh {
			u := domain.Instant(w / time.Microsecond)
			c.Start = now - now%u
			c.Expires = c.Start + u
		}
	case WindowInt32Millis:
		ms := int32(w / time.Millisecond)
		c.Expires = c.Start.Add(time.Duration(ms) * time.Millisecond)
	case StoresUnixNanos:
		// Written as UnixNano and read back as microseconds; time.Time
		// wraps silently past 2262.
		c.Start = domain.Instant(c.Start.Time().UnixNano() / int64(time.Microsecond))
		c.Expires = domain.Instant(c.Expires.Time().UnixNano() / int64(time.Microsecond))
	case RenewalKeepsCount:
		if present && !before.Active(now) {
			c.Used += before.Used
		}
	case ChargesOneUnit:
		if present && before.Active(now) {
			c.Used = before.Used + 1
		} else {
			c.Used = 1
		}
	}
	return s.encode29(s.encode28(c, before, present, now)) // hunt28.go, hunt29.go
}

func truncate(i domain.Instant, unit time.Duration) domain.Instant {
	u := domain.Instant(unit / time.Microsecond)
	return i - i%u
}

// jsonRoundTrip stores c as a JSON object and reads it back the way a
// generic decoder does, into float64 numbers.
func jsonRoundTrip(c domain.Counter) domain.Counter {
	b, err := json.Marshal(map[string]int64{"used": int64(c.Used), "start": int64(c.Start), "expires": int64(c.Expires)})
	if err != nil {
		return domain.Counter{}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return domain.Counter{}
	}
	num := func(k string) int64 {
		f, _ := m[k].(float64)
		return int64(f)
	}
	return domain.Counter{Used: num("used"), Start: domain.Instant(num("start")), Expires: domain.Instant(num("expires"))}
}
