package wiring

import (
	"context"
	"fmt"

	"github.com/runlimit/runlimit/internal/nilcheck"
	"github.com/runlimit/runlimit/ports"
)

// hostStore returns the host's store of [BackendStore] and signs it up for
// what it can do (see addStore), and for Close if the Runtime opened it
// through Config.NewStoreFunc and it is a [ports.Closer]. A store from
// Config.Store is borrowed and never closed.
func (r *runtimeState) hostStore(ctx context.Context) (ports.Store, error) {
	store, field := r.cfg.Store, "Store"
	if store == nil {
		field = "NewStoreFunc"
		s, err := r.cfg.NewStoreFunc(ctx)
		if err != nil {
			return nil, fmt.Errorf("runlimit: NewStoreFunc: %w", err)
		}
		if c, ok := s.(ports.Closer); ok && !nilcheck.IsNil(s) {
			r.closers = append(r.closers, closer{name: string(BackendStore), Closer: c, host: true})
		}
		store = s
	}
	if nilcheck.IsNil(store) {
		return nil, &ConfigError{Field: field, Reason: "holds no store (nil)"}
	}
	r.addStore(string(BackendStore), store)
	return store, nil
}

// addStore signs store up, under name, for what it can do: the cleanup
// loop if it is a [ports.Cleaner], readiness checks if it is a
// [ports.ReadinessChecker] or a [ports.StatsReporter], StatsFuncs if it is
// the latter, and a watch on its poisoned shards if it
// reports them, as a memory store does.
func (r *runtimeState) addStore(name string, store ports.Store) {
	poison := newPoisonWatch(name, store)
	if poison != nil {
		r.poison = append(r.poison, poison)
	}
	if c, ok := store.(ports.Cleaner); ok {
		r.cleaners = append(r.cleaners, cleaner{name: name, Cleaner: c, poison: poison})
	}
	if rep, ok := newReporter(name, store); ok {
		r.reporters = append(r.reporters, rep)
	}
}
