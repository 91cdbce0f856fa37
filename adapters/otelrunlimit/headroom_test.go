package otelrunlimit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/ports"
)

// countingStats is a Stats method that counts its calls and answers what
// it is told to.
type countingStats struct {
	mu    sync.Mutex
	calls int
	st    ports.Stats
	err   error
}

func (c *countingStats) Stats(context.Context) (ports.Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return c.st, c.err
}

func (c *countingStats) set(st ports.Stats, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st, c.err = st, err
}

func (c *countingStats) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// TestHeadroomIsReadAtABoundedRate: however often the exporter collects,
// a store is read at most once per stats interval, and collections in
// between report the last reading.
func TestHeadroomIsReadAtABoundedRate(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	store := &countingStats{st: ports.Stats{Capacity: 30, Shards: 3, Headroom: []int64{10, 4, 7}}}
	stop, err := f.tel.WatchStore("gate", store.Stats)
	require.NoError(t, err)

	for range 5 {
		s := f.collect(t)
		require.Equal(t, map[string]int64{"runlimit.store=gate": 21}, s.gauges[otelrunlimit.MetricHeadroom])
		require.Equal(t, map[string]int64{"runlimit.store=gate": 4}, s.gauges[otelrunlimit.MetricFullestHeadroom])
	}
	require.Equal(t, 1, store.count())

	store.set(ports.Stats{Capacity: 30, Shards: 3, Headroom: []int64{9, 0, 7}}, nil)
	f.clock.Advance(otelrunlimit.DefaultStatsInterval - time.Millisecond)
	require.Equal(t, int64(21), f.collect(t).gauges[otelrunlimit.MetricHeadroom]["runlimit.store=gate"])
	f.clock.Advance(time.Millisecond)
	s := f.collect(t)
	require.Equal(t, int64(16), s.gauges[otelrunlimit.MetricHeadroom]["runlimit.store=gate"])
	require.Equal(t, int64(0), s.gauges[otelrunlimit.MetricFullestHeadroom]["runlimit.store=gate"])
	require.Equal(t, 2, store.count())

	stop()
	stop() // twice is harmless
	f.clock.Advance(time.Hour)
	require.Empty(t, f.collect(t).gauges[otelrunlimit.MetricHeadroom], "a store no longer watched is not reported")
	require.Equal(t, 2, store.count())
}

// TestHeadroomStatsErrorsDoNotBreakCollection: a store whose Stats fails
// reports no headroom, for one interval, and the other stores and metrics
// are collected as usual.
func TestHeadroomStatsErrorsDoNotBreakCollection(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	bad := &countingStats{err: errors.New("database unreachable")}
	good := &countingStats{st: ports.Stats{Capacity: 8, Shards: 2, Headroom: []int64{3, 5}}}
	for name, s := range map[string]*countingStats{"postgres": bad, "gate": good} {
		stop, err := f.tel.WatchStore(name, s.Stats)
		require.NoError(t, err)
		t.Cleanup(stop)
	}
	f.tel.EndCleanup(context.Background(), "gate", 1, nil)

	for range 3 {
		s := f.collect(t)
		require.Equal(t, map[string]int64{"runlimit.store=gate": 8}, s.gauges[otelrunlimit.MetricHeadroom])
		require.Equal(t, map[string]int64{"runlimit.store=gate": 1}, s.sums[otelrunlimit.MetricCleanupRemoved])
	}
	require.Equal(t, 1, bad.count(), "a failed reading is kept for the interval too")

	bad.set(ports.Stats{Capacity: 512, Shards: 256, Headroom: make([]int64, 256)}, nil)
	f.clock.Advance(otelrunlimit.DefaultStatsInterval)
	require.Equal(t, map[string]int64{"runlimit.store=gate": 8, "runlimit.store=postgres": 0},
		f.collect(t).gauges[otelrunlimit.MetricHeadroom], "the store answers again")
}

// TestHeadroomStatsPanicsDoNotBreakCollection: a host store whose Stats
// panics on the exporter's goroutine reports no headroom, as one that
// fails, and the process goes on.
func TestHeadroomStatsPanicsDoNotBreakCollection(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	good := &countingStats{st: ports.Stats{Capacity: 8, Shards: 2, Headroom: []int64{3, 5}}}
	stop, err := f.tel.WatchStore("gate", good.Stats)
	require.NoError(t, err)
	t.Cleanup(stop)
	stop, err = f.tel.WatchStore("store", func(context.Context) (ports.Stats, error) { panic("stats bug") })
	require.NoError(t, err)
	t.Cleanup(stop)
	require.Equal(t, map[string]int64{"runlimit.store=gate": 8}, f.collect(t).gauges[otelrunlimit.MetricHeadroom])
}

func TestNegativeStatsIntervalIsRejected(t *testing.T) {
	t.Parallel()
	_, err := otelrunlimit.New(otelrunlimit.Config{StatsInterval: -time.Second})
	require.ErrorIs(t, err, app.ErrInvalidConfig)
	require.EqualError(t, err, "runlimit: invalid config: otelrunlimit StatsInterval -1s is negative")
}

// TestHeadroomOfAStoreWithoutPartitionsIsNotReported: a host's store whose
// Stats reports no capacity partitions (it has no bound, and counts only
// its entries) reports no headroom, rather than a zero that reads as a
// full store; a store watched beside it reports as usual.
func TestHeadroomOfAStoreWithoutPartitionsIsNotReported(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	unbounded := &countingStats{st: ports.Stats{Entries: 12}}
	gate := &countingStats{st: ports.Stats{Capacity: 8, Shards: 2, Headroom: []int64{3, 5}}}
	for name, s := range map[string]*countingStats{"store": unbounded, "gate": gate} {
		stop, err := f.tel.WatchStore(name, s.Stats)
		require.NoError(t, err)
		t.Cleanup(stop)
	}
	s := f.collect(t)
	require.Equal(t, 1, unbounded.count(), "the store was read")
	require.Equal(t, map[string]int64{"runlimit.store=gate": 8}, s.gauges[otelrunlimit.MetricHeadroom])
	require.Equal(t, map[string]int64{"runlimit.store=gate": 3}, s.gauges[otelrunlimit.MetricFullestHeadroom])
}
