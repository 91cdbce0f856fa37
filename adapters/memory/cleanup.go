package memory

import (
	"context"
	"runtime"

	"github.com/runlimit/runlimit/domain"
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
// A context that ends between shards, or between two lock holds on one
// shard, stops the sweep; the count so far comes back with its error.
//
// However large maxEntries is, a shard's lock is held for at most
// 64 removals at a time: a large backlog is removed in chunks,
// and the lock is released between them, so admissions on the shard wait
// for one chunk, not for the whole backlog.
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
		m, err := s.cleanShard(ctx, &s.shards[i], sample, maxEntries-removed)
		removed += m
		if err != nil {
			return removed, err
		}
	}
	if shards := s.PoisonedShards(); len(shards) > 0 {
		return removed, &PoisonedShardError{Shard: shards[0]}
	}
	return removed, nil
}

// cleanupChunk is the most expired entries CleanupExpired removes from a
// shard in one hold of its lock. A removal costs a heap pop and an index
// deletion, about a microsecond on a large shard, so a chunk keeps the
// lock for tens of microseconds where a backlog of a million entries in one
// hold would keep every check of the shard waiting for most of a second.
// CleanupExpired and the package documentation give its value: keep them in
// step.
const cleanupChunk = 64

// cleanShard removes up to limit entries of sh expired at sample, in
// chunks of at most cleanupChunk under one hold of the shard's lock each,
// and returns how many it removed. Between chunks the lock is free, and
// waiting admissions go first; a chunk that removes less than it may
// found no more entries expired, and ends the shard's turn. A poisoned
// shard is left untouched. A closed store, or a ctx that ends between
// chunks, ends it with the count so far and the error.
func (s *Store) cleanShard(ctx context.Context, sh *shard, sample domain.Instant, limit int) (int, error) {
	removed := 0
	for {
		sh.lockWriter()
		if s.closed.Load() {
			sh.unlockWriter()
			return removed, &OpError{Op: "cleanup", Err: ErrClosed}
		}
		chunk, m := min(limit-removed, cleanupChunk), 0
		if !sh.poisoned.Load() {
			m = sh.removeExpired(sh.clamp(sample), chunk)
		}
		sh.unlockWriter()
		removed += m
		if m < chunk || removed == limit {
			return removed, nil
		}
		if err := ctx.Err(); err != nil {
			return removed, &OpError{Op: "cleanup", Err: err}
		}
		// Unlock woke a waiting admission, if any, but retaking the lock
		// at once would most often beat it there: yield so that it runs
		// first.
		runtime.Gosched()
	}
}
