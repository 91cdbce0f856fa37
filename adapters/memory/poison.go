package memory

// PoisonedShards returns the indexes of the shards poisoned by a panic, in
// ascending order, or nil when there are none. Use it in readiness checks:
// with the default single shard, one poisoned shard is the whole store.
func (s *Store) PoisonedShards() []int {
	if s == nil || s.poisoned.Load() == 0 {
		return nil
	}
	var out []int
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		if sh.poisoned.Load() {
			out = append(out, i)
		}
		sh.mu.Unlock()
	}
	return out
}

// RecoverPoisoned empties every poisoned shard, clears its mark and returns
// how many it recovered. Healthy shards keep their counters. It is an
// explicit recovery action: the counters of a recovered shard are lost, so
// its subjects start fresh windows. The shard's clock floor is kept, so its
// time still never goes backwards.
func (s *Store) RecoverPoisoned() int {
	if s == nil || s.poisoned.Load() == 0 {
		return 0
	}
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.lockWriter()
		if sh.poisoned.Load() {
			sh.reset()
			sh.poisoned.Store(false)
			s.poisoned.Add(-1)
			n++
		}
		sh.unlockWriter()
	}
	return n
}
