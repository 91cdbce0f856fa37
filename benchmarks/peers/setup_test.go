package peers_test

import (
	"testing"

	"github.com/runlimit/runlimit/benchmarks/peers"
)

// newLimiter builds c's limiter for subjects and closes it when tb ends.
func newLimiter(tb testing.TB, c peers.Contender, subjects []string) peers.Limiter {
	tb.Helper()
	l, err := c.New(subjects)
	if err != nil {
		tb.Fatalf("%s: %v", c.ID, err)
	}
	tb.Cleanup(l.Close)
	return l
}

// warm checks every subject once, so that a benchmark times the steady
// state rather than the first insert of each key, and returns the readings
// of every key afterwards.
func warm(tb testing.TB, l peers.Limiter, subjects []string) []int64 {
	tb.Helper()
	for i := range subjects {
		if !l.Allow(i) {
			tb.Fatalf("warm-up check of subject %d was denied", i)
		}
	}
	return readings(tb, l, subjects)
}

func readings(tb testing.TB, l peers.Limiter, subjects []string) []int64 {
	tb.Helper()
	r := make([]int64, len(subjects))
	for i, s := range subjects {
		n, err := l.Counted(s)
		if err != nil {
			tb.Fatalf("reading subject %d: %v", i, err)
		}
		r[i] = n
	}
	return r
}

// requireCounted proves that the library counted hits(i) events on the
// i-th subject's own counter since before was read, and, where the library
// says how many keys it holds, that it holds one per subject.
func requireCounted(tb testing.TB, l peers.Limiter, subjects []string, before []int64, hits func(i int) int64) {
	tb.Helper()
	after := readings(tb, l, subjects)
	for i := range subjects {
		if got, want := after[i]-before[i], hits(i); got != want {
			tb.Fatalf("subject %d: the library counted %d events, want %d", i, got, want)
		}
	}
	if n, ok := l.Tracked(); ok && n != len(subjects) {
		tb.Fatalf("the library holds %d keys, want %d (one per subject)", n, len(subjects))
	}
}

// requireAllAllowed fails the benchmark when any timed check was denied:
// a denial takes a cheaper path and would flatter the contender.
func requireAllAllowed(tb testing.TB, denied, checks int) {
	tb.Helper()
	if denied != 0 {
		tb.Fatalf("%d of %d timed checks were denied or failed", denied, checks)
	}
}

// roundRobin returns how many of n round-robin checks over keys subjects
// landed on subject i.
func roundRobin(n, keys int) func(i int) int64 {
	return func(i int) int64 {
		h := int64(n / keys)
		if i < n%keys {
			h++
		}
		return h
	}
}
