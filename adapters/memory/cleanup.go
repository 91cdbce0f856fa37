package memory

import (
	"context"

	"github.com/runlimit/runlimit/ports"
)

// CleanupExpired removes at most maxEntries expired entries and returns how
// many it removed. It visits the shards one at a time, starting from a
// different shard on each call so that a small budget still reaches every
// shard over time, and removes the oldest expiries of each shard first. It
// never removes an active entry. It checks its call in the order
// [ports.Cleaner] documents: a negative maxEntries is an [OpError]
// matching [ErrNegativeMax] and [domain.ErrInvalidInput], then a nil ctx
// one matching [ports.ErrNilContext], then a closed store [ErrClosed];
// maxEntries 0 then removes nothing and returns (0, nil), whatever ctx is.
//
// Poisoned shards are skipped, never touched: the healthy ones are still
// cleaned, and the count comes back with a [*PoisonedShardError] naming the
// lowest poisoned shard, so a maintenance loop keeps reporting the fault.
// A context that ends between shards stops the sweep; the count so far
// comes back with its error.
func (s *Store) CleanupExpired(ctx context.Context, maxEntries int) (int, error) {
	if maxEntries < 0 {
		return 0, &OpError{Op: "cleanup", Err: ErrNegativeMax}
	}
	if ctx == nil {
		return 0, &OpError{Op: "cleanup", Err: ports.ErrNilContext}
	}
	if s == nil || len(s.shards) == 0 || s.closed.Load() {
		return 0, &OpError{Op: "cleanup", Err: ErrClosed}
	}
	if maxEntries == 0 {
		return 0, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, &OpError{Op: "cleanup", Err: err}
	}
	// The clock is read before any lock, so a panicking clock poisons
	// nothing here. Each shard clamps the sample to the latest time it has
	// seen; a stale sample only removes fewer entries.
	sample := s.sample()
	n := len(s.shards)
	start := int(s.sweep.Add(1)-1) % n
	removed := 0
	for k := 0; k < n && removed < maxEntries; k++ {
		if k > 0 {
			if err := ctx.Err(); err != nil {
				return removed, &OpError{Op: "cleanup", Err: err}
			}
		}
		i := (start + k) % n
		sh := &s.shards[i]
		sh.lockWriter()
		if s.closed.Load() {
			sh.unlockWriter()
			return removed, &OpError{Op: "cleanup", Err: ErrClosed}
		}
		if !sh.poisoned.Load() {
			removed += sh.removeExpired(sh.clamp(sample), maxEntries-removed)
		}
		sh.unlockWriter()
	}
	if shards := s.PoisonedShards(); len(shards) > 0 {
		return removed, &PoisonedShardError{Shard: shards[0]}
	}
	return removed, nil
}
