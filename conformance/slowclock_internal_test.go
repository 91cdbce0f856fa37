package conformance

import (
	"context"
	"testing"
	"time"

	bs "github.com/runlimit/runlimit/conformance/internal/brokenstores"
	"github.com/runlimit/runlimit/domain"
)

// slowStore is a correct store whose every admission first waits, as one
// over a distant server, or on a loaded machine, does.
type slowStore struct {
	*bs.Store
	delay time.Duration
}

func (s slowStore) Admit(ctx context.Context, b *domain.Batch) error {
	time.Sleep(s.delay)
	return s.Store.Admit(ctx, b)
}

// A correct store on a clock that keeps running passes the sub-second case
// however slowly its admissions run: the real time between its checks is
// not the store's fault. With windows of one second, a case whose last
// checks took more than the 700 ms its second window had left failed.
func TestSubSecondCaseOnASlowRunningClock(t *testing.T) {
	t.Parallel()
	newStore := func(_ testing.TB, opts Options) Instance {
		clock := new(ManualClock)
		origin := time.Now()
		s := bs.New(bs.Config{Capacity: opts.Capacity, Clock: func() time.Duration { return clock.Now() + time.Since(origin) }})
		return Instance{Store: slowStore{Store: s, delay: 400 * time.Millisecond}, Advance: clock.Advance}
	}
	caps := probe(t, newStore)
	f := setup(t, newStore, defaultOptions, viaBatchOfOne, caps, newReport(caps))
	testSubSecondPastWholeSecond(t, f)
}
