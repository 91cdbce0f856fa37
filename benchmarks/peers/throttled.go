package peers

import (
	"context"
	"time"

	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
)

// throttledInterval is the GCRA emission interval: every allowed event moves
// the key's theoretical arrival time (TAT) this far ahead, further than
// benchmark time moves between two events of a key (a retained-memory run
// revisits a key after a few seconds), so the TAT counts events exactly.
// The burst of 2^27 (134 million events on one key, about ten seconds of a
// hot key) is the most that keeps interval times burst within the
// limiter's nanosecond arithmetic.
const (
	throttledInterval = time.Minute
	throttledBurst    = 1 << 27
)

// throttledLimiter is throttled's GCRA limiter on its memstore, unbounded
// (no LRU), its cheapest configuration and, like the other peers, without a
// bound on keys.
type throttledLimiter struct {
	store    *memstore.MemStore
	limiter  *throttled.GCRARateLimiterCtx
	ctx      context.Context
	subjects []string
}

func newThrottled(subjects []string) (Limiter, error) {
	store, err := memstore.New(0)
	if err != nil {
		return nil, err
	}
	lim, err := throttled.NewGCRARateLimiterCtx(throttled.WrapStoreWithContext(store), throttled.RateQuota{
		MaxRate:  throttled.PerDuration(1, throttledInterval),
		MaxBurst: throttledBurst,
	})
	if err != nil {
		return nil, err
	}
	return &throttledLimiter{store: store, limiter: lim, ctx: context.Background(), subjects: subjects}, nil
}

func (t *throttledLimiter) Allow(i int) bool { return t.AllowSubject(t.subjects[i]) }

func (t *throttledLimiter) AllowSubject(s string) bool {
	limited, _, err := t.limiter.RateLimitCtx(t.ctx, s, 1)
	return err == nil && !limited
}

// Counted reads the stored TAT in whole intervals. While a key's TAT stays
// ahead of the clock each event adds exactly one interval, so the
// difference of two readings is the events between them.
func (t *throttledLimiter) Counted(s string) (int64, error) {
	tat, _, err := t.store.GetWithTime(s)
	if err != nil || tat < 0 {
		return 0, err
	}
	return tat / int64(throttledInterval), nil
}

func (t *throttledLimiter) Tracked() (int, bool) { return 0, false }

func (t *throttledLimiter) Close() {}
