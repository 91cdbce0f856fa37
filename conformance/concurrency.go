package conformance

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// concurrencyScenario checks that concurrent checks never over-admit and
// that batches naming the same keys in opposite orders neither deadlock nor
// miscount. Run it under -race.
func concurrencyScenario() scenario {
	return scenario{name: "concurrency", cases: []testCase{
		{name: "one_key_admits_exactly_the_limit", run: testOneKeyExactLimit},
		{name: "opposite_order_batches_finish_and_count_exactly", run: testOppositeOrderBatches},
	}}
}

// result is one goroutine's view of one check or batch, sent back to the
// test goroutine, which alone may fail the test.
type result struct {
	outcome   domain.Outcome
	remaining []int64
	reason    domain.DenialReason
	err       error
}

func testOneKeyExactLimit(t *testing.T, f *fixture) {
	const g = "concurrency: checks racing on one key admit exactly the limit"
	const workers, perWorker, limit = 8, 25, 60
	p, k := f.policy(limit, window), f.key()
	results := race(f, workers, perWorker, func(int) []domain.Check {
		return []domain.Check{f.check(p, k)}
	})
	seen := make(map[int64]int)
	allowed := 0
	for r := range results {
		require.NoError(t, r.err, "%s: the store failed a valid check", g)
		switch r.outcome {
		case domain.Allowed:
			allowed++
			seen[r.remaining[0]]++
		default:
			require.Equal(t, domain.Denied, r.outcome, "%s", g)
			require.Equal(t, domain.QuotaExhausted, r.reason, "%s", g)
		}
	}
	require.Equal(t, limit, allowed, "%s: %d of %d racing checks were allowed", g, allowed, workers*perWorker)
	for rem := range int64(limit) {
		require.Equal(t, 1, seen[rem], "%s: remaining %d was reported %d times (a lost or doubled update)", g, rem, seen[rem])
	}
	f.deny(f.check(p, k), domain.QuotaExhausted, g)
}

func testOppositeOrderBatches(t *testing.T, f *fixture) {
	const g = "concurrency: batches naming the same keys in opposite orders finish and count exactly"
	const workers, perWorker, limit = 8, 10, 30
	p := f.policy(limit, window)
	ks := f.keys(4)
	forward := make([]domain.Check, len(ks))
	backward := make([]domain.Check, len(ks))
	for i, k := range ks {
		forward[i] = f.check(p, k)
		backward[len(ks)-1-i] = f.check(p, k)
	}
	results := race(f, workers, perWorker, func(w int) []domain.Check {
		if w%2 == 0 {
			return forward
		}
		return backward
	})
	allowed := 0
	for r := range results {
		require.NoError(t, r.err, "%s: the store failed a valid batch", g)
		if r.outcome == domain.Allowed {
			allowed++
			require.Len(t, r.remaining, len(ks), "%s: one allowance per check", g)
			for _, rem := range r.remaining[1:] {
				require.Equal(t, r.remaining[0], rem, "%s: the counters of an allowed batch moved apart", g)
			}
		}
	}
	require.Equal(t, limit, allowed, "%s: %d of %d racing batches were allowed", g, allowed, workers*perWorker)
	for _, k := range ks {
		f.deny(f.check(p, k), domain.QuotaExhausted, g+" (every key was charged by every allowed batch)")
	}
}

// race runs workers goroutines that each send perWorker batches as soon as
// all of them are ready, and returns their results once every one is done.
func race(f *fixture, workers, perWorker int, batch func(worker int) []domain.Check) <-chan result {
	results := make(chan result, workers*perWorker)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		checks := batch(w)
		wg.Go(func() {
			<-start
			for range perWorker {
				results <- admitOnce(f, checks)
			}
		})
	}
	close(start)
	wg.Wait()
	close(results)
	return results
}

func admitOnce(f *fixture, checks []domain.Check) result {
	bd, err := f.limiter.CheckAll(f.ctx, checks)
	if err != nil {
		return result{err: err}
	}
	r := result{outcome: bd.Outcome()}
	if _, den, ok := bd.Denied(); ok {
		r.reason = den.Reason()
	}
	for _, d := range bd.Decisions() {
		a, _ := d.Allowance()
		r.remaining = append(r.remaining, a.Remaining)
	}
	return r
}
