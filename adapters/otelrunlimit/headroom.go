package otelrunlimit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/runlimit/runlimit/ports"
)

// storeWatch reads one store's occupancy for the headroom gauges, at most
// once per interval.
type storeWatch struct {
	stats    func(context.Context) (ports.Stats, error)
	interval time.Duration
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

	// mu is held across Stats, so that collections that overlap read the
	// store once between them: a buffered channel of one, held while it
	// holds a value, so that a collection whose context ends, or whose
	// watch stops, gives up waiting for it.
	mu      chan struct{}
	read    bool      // a reading was taken
	at      time.Time // when
	last    ports.Stats
	lastErr error
}

// watch registers the gauges' callback for one store.
func (m *instruments) watch(store string, stats func(context.Context) (ports.Stats, error), interval time.Duration, now func() time.Time) (func(), error) {
	w := &storeWatch{stats: stats, interval: interval, now: now,
		attrs: metric.WithAttributes(AttrStore.String(store)), mu: make(chan struct{}, 1)}
	w.stopped, w.stop = context.WithCancel(context.Background())
	reg, err := m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		st, err := w.sample(ctx)
		if err != nil {
			// The store did not answer: no headroom is better than a
			// stale one, and the other stores' collection goes on.
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
	defer m.mu.Unlock()
	if m.closed {
		// Close ran while the callback was registered.
		_ = reg.Unregister()
		return func() {}, nil
	}
	if m.watches == nil {
		m.watches = make(map[*watchRegistration]struct{})
	}
	m.watches[wr] = struct{}{}
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

// unregister ends the watch, so that a collection in its callback returns,
// then unregisters the callback.
func (w *watchRegistration) unregister() {
	w.once.Do(func() {
		w.watch.stop()
		_ = w.reg.Unregister()
	})
}

// sample returns the last reading while it is younger than the interval,
// and otherwise reads the store again. A failed reading is kept as long.
//
// The reading's context ends with ctx, the collection's, or with the
// watch, whichever comes first; a collection that gives up waiting for
// another's reading reports nothing.
func (w *storeWatch) sample(ctx context.Context) (ports.Stats, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(w.stopped, cancel)()
	select {
	case w.mu <- struct{}{}:
	case <-ctx.Done():
		return ports.Stats{}, ctx.Err()
	}
	defer func() { <-w.mu }()
	if err := ctx.Err(); err != nil {
		return ports.Stats{}, err
	}
	now := w.now()
	if w.read && now.Sub(w.at) < w.interval {
		return w.last, w.lastErr
	}
	w.last, w.lastErr = w.readStats(ctx)
	w.read, w.at = true, now
	return w.last, w.lastErr
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
