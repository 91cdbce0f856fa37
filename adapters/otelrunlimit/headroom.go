package otelrunlimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/runlimit/runlimit/ports"
)

// storeWatch reads one store's occupancy for the headroom gauges, at most
// once per interval, in the background: a collection waits for a reading
// at most timeout.
type storeWatch struct {
	stats    func(context.Context) (ports.Stats, error)
	interval time.Duration
	timeout  time.Duration
	now      func() time.Time
	attrs    metric.ObserveOption

	// stopped ends with the watch (its stop function, or the
	// Telemetry's Close): a reading in progress is cancelled, and a
	// collection waiting for one gives up, before the callback is
	// unregistered. The SDK's Unregister waits for a collection in
	// progress, and a store held up (a locked table, a stalled
	// connection) would otherwise hold up the host's shutdown for as long
	// as the store's budget allows.
	stopped context.Context
	stop    context.CancelFunc
	// readings counts the readings in flight, which stop waits for once
	// it has cancelled them.
	readings sync.WaitGroup

	mu      sync.Mutex
	flight  *reading  // the reading in progress, nil when none
	read    bool      // a reading was taken
	at      time.Time // when it ended
	last    ports.Stats
	lastErr error
}

// reading is one call of a store's Stats, which collections that overlap
// share: done is closed once st and err are set.
type reading struct {
	done chan struct{}
	// deadline is when collections stop waiting for the reading: its
	// start plus the watch's timeout, for every collection that shares
	// it.
	deadline time.Time
	st       ports.Stats
	err      error
}

// errStatsTimeout is a collection's answer when the store's reading did
// not come within the watch's timeout: no headroom for that store.
var errStatsTimeout = errors.New("otelrunlimit: the store's Stats did not answer within StatsTimeout")

// watch registers the gauges' callback for one store.
func (m *instruments) watch(store string, stats func(context.Context) (ports.Stats, error), interval, timeout time.Duration, now func() time.Time) (func(), error) {
	w := &storeWatch{stats: stats, interval: interval, timeout: timeout, now: now,
		attrs: metric.WithAttributes(AttrStore.String(store))}
	w.stopped, w.stop = context.WithCancel(context.Background())
	reg, err := m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		st, err := w.sample(ctx)
		if err != nil {
			// The store did not answer: no headroom is better than a
			// stale one, and the other stores' collection goes on.
			return nil
		}
		if len(st.Headroom) == 0 {
			// A store that reports no capacity partitions (a host's store
			// without a bound) has no headroom to report: a zero would
			// read as a full store, and page whoever alerts on it.
			return nil
		}
		var total int64
		for _, h := range st.Headroom {
			total += h
		}
		o.ObserveInt64(m.headroom, total, w.attrs)
		o.ObserveInt64(m.fullest, st.MinHeadroom(), w.attrs)
		return nil
	}, m.headroom, m.fullest)
	if err != nil {
		w.stop()
		return nil, err
	}
	wr := &watchRegistration{m: m, reg: reg, watch: w}
	m.mu.Lock()
	closed := m.closed
	if !closed {
		if m.watches == nil {
			m.watches = make(map[*watchRegistration]struct{})
		}
		m.watches[wr] = struct{}{}
	}
	m.mu.Unlock()
	if closed {
		// Close ran while the callback was registered, and a collection
		// may have run it meanwhile: its reading is ended and waited for,
		// as Close does for the watches it found, rather than left to
		// run on after WatchStore has returned.
		wr.unregister()
		return func() {}, nil
	}
	return wr.stop, nil
}

// watchRegistration is the callback of one watched store.
type watchRegistration struct {
	m     *instruments
	reg   metric.Registration
	watch *storeWatch
	once  sync.Once
}

// stop unregisters the callback, once, and forgets it.
func (w *watchRegistration) stop() {
	w.m.mu.Lock()
	delete(w.m.watches, w)
	w.m.mu.Unlock()
	w.unregister()
}

// unregister ends the watch, so that a collection in its callback returns
// and the reading in flight is cancelled, waits for that reading to
// return, then unregisters the callback.
func (w *watchRegistration) unregister() {
	w.once.Do(func() {
		// Stopped under the lock that sample starts a reading under, so
		// that no reading starts after this Wait has begun.
		w.watch.mu.Lock()
		w.watch.stop()
		w.watch.mu.Unlock()
		w.watch.readings.Wait()
		_ = w.reg.Unregister()
	})
}

// sample returns the last reading while it is younger than the interval,
// and otherwise the answer of a reading of the store: the one in flight,
// or a new one. A failed reading is kept as long.
//
// The reading runs on a goroutine of its own, under the watch's context,
// and collections wait for it no longer than the watch's timeout from
// the reading's start, or than ctx, the collection's, allows: a store
// held up by its database (a locked ledger) then reports nothing, rather
// than holding the scrape for its whole budget, and its reading, when it
// comes, serves the collections after it. Only one reading is in flight
// at a time, so a store whose reading never ends delays the scrapes
// once, by the timeout, and not every one of them.
func (w *storeWatch) sample(ctx context.Context) (ports.Stats, error) {
	w.mu.Lock()
	if err := w.stopped.Err(); err != nil {
		w.mu.Unlock()
		return ports.Stats{}, err
	}
	if w.read && w.now().Sub(w.at) < w.interval {
		defer w.mu.Unlock()
		return w.last, w.lastErr
	}
	f := w.flight
	if f == nil {
		f = &reading{done: make(chan struct{}), deadline: w.now().Add(w.timeout)}
		w.flight = f
		w.readings.Add(1)
		go w.take(f)
	}
	wait := f.deadline.Sub(w.now())
	w.mu.Unlock()
	if wait <= 0 {
		// The reading has kept collections waiting for the whole timeout
		// already: one held up for good (a host's Stats that ignores its
		// context) costs the scrapes its timeout once, not at every one.
		select {
		case <-f.done:
			return f.st, f.err
		default:
			return ports.Stats{}, errStatsTimeout
		}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-f.done:
		return f.st, f.err
	case <-ctx.Done():
		return ports.Stats{}, ctx.Err()
	case <-w.stopped.Done():
		return ports.Stats{}, w.stopped.Err()
	case <-timer.C:
		return ports.Stats{}, errStatsTimeout
	}
}

// take runs reading f and keeps its answer as the last one.
func (w *storeWatch) take(f *reading) {
	defer w.readings.Done()
	f.st, f.err = w.readStats(w.stopped)
	w.mu.Lock()
	w.last, w.lastErr = f.st, f.err
	w.read, w.at = true, w.now()
	w.flight = nil
	w.mu.Unlock()
	close(f.done)
}

// readStats calls the store's Stats. It runs on the exporter's goroutine,
// where a host store's panic would end the host's process: the panic is
// recovered and counts as a failed reading.
func (w *storeWatch) readStats(ctx context.Context) (st ports.Stats, err error) {
	defer func() {
		if v := recover(); v != nil {
			st, err = ports.Stats{}, fmt.Errorf("otelrunlimit: Stats panicked with a value of type %T", v)
		}
	}()
	return w.stats(ctx)
}
