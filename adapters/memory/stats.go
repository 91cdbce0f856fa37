package memory

import (
	"context"

	"github.com/runlimit/runlimit/ports"
)

// Stats reports the store's occupancy: stored entries (expired ones not yet
// removed included), the total capacity, the shard count and each shard's
// free slots. The shards are read one at a time, so under concurrent
// admissions the totals are a sum of per-shard snapshots, not one instant.
//
// A poisoned shard still counts its entries (they are kept until
// [Store.RecoverPoisoned]) and reports a headroom of 0, because it admits
// nothing; [Store.PoisonedShards] names such shards.
func (s *Store) Stats(ctx context.Context) (ports.Stats, error) {
	if ctx == nil {
		return ports.Stats{}, &OpError{Op: "stats", Err: ports.ErrNilContext}
	}
	// A closed store says so whatever the context (ports.Closer); the
	// state is read again under each shard's lock.
	if s == nil || len(s.shards) == 0 || s.closed.Load() {
		return ports.Stats{}, &OpError{Op: "stats", Err: ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return ports.Stats{}, &OpError{Op: "stats", Err: err}
	}
	st := ports.Stats{
		Capacity: int64(s.maxKeys),
		Shards:   len(s.shards),
		Headroom: make([]int64, len(s.shards)),
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		if s.closed.Load() {
			sh.mu.Unlock()
			return ports.Stats{}, &OpError{Op: "stats", Err: ErrClosed}
		}
		st.Entries += int64(sh.len())
		st.Headroom[i] = int64(sh.headroom())
		sh.mu.Unlock()
	}
	return st, nil
}
