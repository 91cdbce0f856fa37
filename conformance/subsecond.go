package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// testSubSecondPastWholeSecond checks that the store keeps the fraction of
// a second in its times when that fraction has fewer than six digits of
// microseconds. A store that builds its time from a server's clock
// reply of whole seconds and microseconds (Redis TIME) by joining the two
// as text ("1700000000" .. "34567") reads 10 or more times too little
// whenever the microseconds are below 100000, about one reading in ten,
// and a clamp then holds its time still: windows end late and new ones
// are anchored in the past. The case's start lies 234567 µs past a whole
// second, so the usual steps never show it; this one steps to 34567 µs.
func testSubSecondPastWholeSecond(t *testing.T, f *fixture) {
	const g = "time: a time a few microseconds past a whole second is read as it is"
	// 234567 µs + 800 ms is 1 s + 34567 µs: five digits of microseconds.
	w, step := time.Second, 800*time.Millisecond
	if !f.inst.ExactTime {
		// A clock that keeps running cannot be aimed at a microsecond, and
		// the real time the case takes on a loaded machine, or over a
		// network, would end a window of a second by itself: the same
		// steps, each window an hour longer.
		w, step = time.Hour+time.Second, time.Hour+800*time.Millisecond
	}
	p := f.policy(1, w)
	first, second := f.key(), f.key()
	f.requireDuration(w, f.allow(f.check(p, first), 0, g+" (a window anchored at the case's start)").ResetAfter, g)
	f.advance(step)
	f.requireDuration(w, f.allow(f.check(p, second), 0, g+" (a window anchored 34567 µs past a whole second)").ResetAfter, g)
	f.advance(300 * time.Millisecond)
	f.allow(f.check(p, first), 0, g+" (the first window ended 100 ms ago, so its key starts a new one)")
	d := f.deny(f.check(p, second), domain.QuotaExhausted, g+" (the second window, anchored 300 ms ago, still runs)")
	f.requireRetry(d, w-300*time.Millisecond, fmt.Sprintf("%s (the second window ends %v from now)", g, w-300*time.Millisecond))
}
