package peers_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/benchmarks/peers"
)

// Every contender counts each allowed check exactly once, on the key it was
// made for: the benchmarks' verification depends on it.
func TestContendersCountEachKey(t *testing.T) {
	t.Parallel()
	for _, c := range peers.Contenders() {
		t.Run(c.ID, func(t *testing.T) {
			t.Parallel()
			subjects := peers.Subjects(0, 50)
			l := newLimiter(t, c, subjects)
			before := warm(t, l, subjects)
			// Subject i gets i%7 checks, through both entry points.
			for i, s := range subjects {
				for j := range i % 7 {
					if j%2 == 0 {
						require.True(t, l.Allow(i), "subject %d", i)
					} else {
						require.True(t, l.AllowSubject(s), "subject %d", i)
					}
				}
			}
			after := readings(t, l, subjects)
			for i := range subjects {
				require.Equal(t, int64(i%7), after[i]-before[i], "subject %d", i)
			}
			if n, ok := l.Tracked(); ok {
				require.Equal(t, len(subjects), n)
			}
		})
	}
}

// Concurrent checks on distinct keys are all counted, as
// BenchmarkParallel requires.
func TestContendersCountConcurrentChecks(t *testing.T) {
	t.Parallel()
	const goroutines, keys, rounds = 4, 64, 25
	for _, c := range peers.Contenders() {
		t.Run(c.ID, func(t *testing.T) {
			t.Parallel()
			subjects := peers.Subjects(0, goroutines*keys)
			l := newLimiter(t, c, subjects)
			before := warm(t, l, subjects)
			denied := make([]int, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for range rounds {
						for k := range keys {
							if !l.Allow(g*keys + k) {
								denied[g]++
							}
						}
					}
				})
			}
			wg.Wait()
			require.Equal(t, make([]int, goroutines), denied)
			after := readings(t, l, subjects)
			for i := range subjects {
				require.Equal(t, int64(rounds), after[i]-before[i], "subject %d", i)
			}
		})
	}
}

// A key nobody checked reads as zero, and Label finds every contender.
func TestContendersReadUnknownKeysAsZero(t *testing.T) {
	t.Parallel()
	for _, c := range peers.Contenders() {
		t.Run(c.ID, func(t *testing.T) {
			t.Parallel()
			l := newLimiter(t, c, nil)
			require.True(t, l.AllowSubject("known"))
			n, err := l.Counted("unknown")
			require.NoError(t, err)
			require.Zero(t, n)
			if n, ok := l.Tracked(); ok {
				// Runlimit's reading checked the unknown key too.
				require.GreaterOrEqual(t, n, 1)
			}
			require.Equal(t, c.Label, peers.Label(c.ID))
			require.NotEqual(t, c.ID, c.Label)
		})
	}
}
