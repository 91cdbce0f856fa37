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

	// mu is held across Stats, so that collections that overlap read the
	// store once between them.
	mu      sync.Mutex
	read    bool      // a reading was taken
	at      time.Time // when
	last    ports.Stats
	lastErr error
}

// watch registers the gauges' callback for one store.
func (m *instruments) watch(store string, stats func(context.Context) (ports.Stats, error), interval time.Duration, now func() time.Time) (func(), error) {
	w := &storeWatch{stats: stats, interval: interval, now: now,
		attrs: metric.WithAttributes(AttrStore.String(store))}
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
		return nil, err
	}
	wr := &watchRegistration{m: m, reg: reg}
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
	m    *instruments
	reg  metric.Registration
	once sync.Once
}

// stop unregisters the callback, once, and forgets it.
func (w *watchRegistration) stop() {
	w.m.mu.Lock()
	delete(w.m.watches, w)
	w.m.mu.Unlock()
	w.unregister()
}

func (w *watchRegistration) unregister() { w.once.Do(func() { _ = w.reg.Unregister() }) }

// sample returns the last reading while it is younger than the interval,
// and otherwise reads the store again. A failed reading is kept as long.
func (w *storeWatch) sample(ctx context.Context) (ports.Stats, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
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
