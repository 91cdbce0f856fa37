package domain

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// validBySub is Counter.valid as the window rule reads: a stored window is
// no longer than the policy's, measured with Instant.Sub.
func validBySub(c *Counter, p *policyDef) bool {
	if c.Used == 0 {
		return c.Start == 0 && c.Expires == 0
	}
	return c.Used > 0 && c.Used <= p.limit && c.Start < c.Expires &&
		c.Expires.Sub(c.Start) <= p.window
}

// TestCounterValidMatchesSub: valid's microsecond comparison agrees with
// Sub's saturating one at the edges of the Instant range and of the
// policy's window, and on random counters.
func TestCounterValidMatchesSub(t *testing.T) {
	t.Parallel()

	windows := []time.Duration{time.Millisecond, time.Second, 7 * time.Hour, MaxWindow - time.Millisecond, MaxWindow}
	instants := []Instant{math.MinInt64, math.MinInt64 + 1, -1 << 62, -1_000_001, -1, 0, 1, 999, 1000, 1001, 1 << 62, math.MaxInt64 - 1, math.MaxInt64}
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(c Counter, p *policyDef) {
		if got, want := c.valid(p), validBySub(&c, p); got != want {
			t.Fatalf("valid(%+v, window %v) = %v, want %v", c, p.window, got, want)
		}
	}
	for _, w := range windows {
		p := &policyDef{limit: 10, window: w}
		micros := Instant(w / time.Microsecond)
		for _, start := range instants {
			for _, d := range []Instant{-1, 0, 1, micros - 1, micros, micros + 1, 2 * micros, math.MaxInt64} {
				for _, used := range []int64{-1, 0, 1, 10, 11} {
					check(Counter{Used: used, Start: start, Expires: start + d}, p)
				}
			}
			for _, end := range instants {
				check(Counter{Used: 1, Start: start, Expires: end}, p)
			}
		}
		for range 10_000 {
			start := Instant(rng.Int64())
			if rng.IntN(2) == 0 {
				start = -start
			}
			d := Instant(rng.Int64N(int64(micros) * 2))
			check(Counter{Used: 1 + rng.Int64N(10), Start: start, Expires: start + d}, p)
		}
	}
}

// TestActiveWindowLeftIsExact: for a valid counter active at now (now in
// [Start, Expires)), the time left that evaluate computes in plain
// microseconds is what Instant.Sub returns.
func TestActiveWindowLeftIsExact(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		window := time.Duration(1+rng.Int64N(int64(MaxWindow/time.Millisecond))) * time.Millisecond
		p := &policyDef{limit: 1, window: window}
		span := 1 + rng.Int64N(int64(window/time.Microsecond))
		start := Instant(rng.Int64N(1<<62) - rng.Int64N(1<<62))
		if rng.IntN(8) == 0 {
			start = math.MaxInt64 - Instant(span) // a window ending at the top of the range
		}
		c := Counter{Used: 1, Start: start, Expires: start + Instant(span)}
		if !c.valid(p) {
			t.Fatalf("fixture %+v is not valid for window %v", c, window)
		}
		now := c.Start + Instant(rng.Int64N(span))
		if got, want := time.Duration(c.Expires-now)*time.Microsecond, c.Expires.Sub(now); got != want {
			t.Fatalf("left at %d in %+v = %v, want %v", now, c, got, want)
		}
	}
}
