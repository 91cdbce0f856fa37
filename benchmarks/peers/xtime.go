package peers

import (
	"fmt"
	"math"
	"sync"

	"golang.org/x/time/rate"
)

// xtimeBurst and xtimeRate keep every bucket far from empty: 2^50 tokens
// (exact in the float64 the limiter counts in) refilled at one per 30
// years, so that a reading's refill since the last one is far below half a
// token and rounding recovers the exact count.
const (
	xtimeBurst = 1 << 50
	xtimeRate  = rate.Limit(1e-9)
)

// xtime is the keyed limiter many services write first: a map of
// *rate.Limiter behind one mutex.
type xtime struct {
	mu       sync.Mutex
	m        map[string]*rate.Limiter
	subjects []string
}

func newXTime(subjects []string) (Limiter, error) {
	return &xtime{m: map[string]*rate.Limiter{}, subjects: subjects}, nil
}

func (x *xtime) Allow(i int) bool { return x.AllowSubject(x.subjects[i]) }

func (x *xtime) AllowSubject(s string) bool {
	x.mu.Lock()
	l, ok := x.m[s]
	if !ok {
		l = rate.NewLimiter(xtimeRate, xtimeBurst)
		x.m[s] = l
	}
	x.mu.Unlock()
	return l.Allow()
}

func (x *xtime) Counted(s string) (int64, error) {
	x.mu.Lock()
	l, ok := x.m[s]
	x.mu.Unlock()
	if !ok {
		return 0, nil
	}
	used := math.Round(xtimeBurst - l.Tokens())
	if used < 0 {
		return 0, fmt.Errorf("xtime: %v tokens above the burst", -used)
	}
	return int64(used), nil
}

func (x *xtime) Tracked() (int, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.m), true
}

func (x *xtime) Close() {}
