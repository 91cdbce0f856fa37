package memory

import "github.com/runlimit/runlimit/domain"

// ShardOf exposes the shard a key maps to, so external tests can aim keys
// at shards.
func (s *Store) ShardOf(k domain.CounterKey) int { return s.shardOf(k) }

// Holds reports whether k has an entry, expired or not, so external tests
// can see which entries cleanup removed.
func (s *Store) Holds(k domain.CounterKey) bool {
	sh := &s.shards[s.shardOf(k)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := sh.lookup(&k)
	return ok
}

// Floor returns the latest time shard i has been evaluated at, which
// every admission and cleanup that reaches the shard raises to its clock
// sample, so external tests can see that an operation did no work there.
func (s *Store) Floor(i int) domain.Instant {
	sh := &s.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return domain.Instant(sh.last.Load())
}

// HoldShard takes shard i's lock as a reader of the shard does (Stats,
// PoisonedShards), without announcing a change, and returns its release,
// so that external tests can see which checks need that lock.
func (s *Store) HoldShard(i int) (release func()) {
	sh := &s.shards[i]
	sh.mu.Lock()
	return sh.mu.Unlock
}

// CleanupChunk is the most entries CleanupExpired removes from a shard in
// one hold of its lock, so that external tests can count the holds.
const CleanupChunk = cleanupChunk
