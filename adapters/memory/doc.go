// Package memory is Runlimit's process-local store: sharded, hard-bounded and
// safe for concurrent use. It implements [ports.Store] and the optional
// [ports.CheckAdmitter] (the single-check path app.Limiter takes),
// [ports.Cleaner], [ports.StatsReporter] and [ports.Closer].
//
// Use it as a per-process quota, or as the coarse first gate in front of a
// shared PostgreSQL quota, where its hard bound protects request parsing and
// the database from attacker-controlled key cardinality.
//
// # Sizing
//
// [Config.MaxKeys] is required: the store never holds more counters than
// that, expired ones not yet removed included. Storage grows on demand up to
// the bound, so a generous bound costs nothing until it is used; what a shard
// has grown to is kept for reuse until [Store.Close].
//
//	store, err := memory.New(memory.Config{MaxKeys: 50_000, Shards: 64})
//	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
//
// # Shards and capacity
//
// A store is split into [Config.Shards] partitions (one by default), each
// with its own lock and a fixed share of MaxKeys: MaxKeys/Shards each, the
// first MaxKeys%Shards shards one more. A key's shard is fixed by its counter
// key bytes. More shards mean less lock contention; the price is that a new
// key whose shard is full is denied with [domain.StorageCapacity] even when
// other shards have room. Active counters are never evicted to make room:
// the denial says when the shard's earliest entry expires, the earliest time
// a retry can succeed.
//
// # Cleanup
//
// Expired counters keep their slot until removed. Each check first removes
// up to [Config.CleanupPerCheck] expired entries from its own shard, oldest
// expiry first, so a store under steady traffic cleans itself with bounded
// work per check; an expired counter of the key being checked is renewed in
// place. [Store.CleanupExpired] removes more on demand, for a background
// maintenance loop: however large its budget, it removes at most 64
// entries per hold of a shard's lock and yields between holds, so a
// backlog of a million expired counters delays a check of the shard by
// about one chunk, not by the whole sweep.
//
// # Lock holds
//
// On a login path the keys are the attacker's, so no operation holds a
// shard's lock for work that grows with the keys stored. A check or batch
// holds its shards for its own keys plus up to CleanupPerCheck removals per
// check: at most [Config.MaxBatchSize] × [Config.CleanupPerCheck]
// removals, whatever the store holds. CleanupExpired holds a shard for
// one chunk at a time, as above; [Store.Stats], [Store.PoisonedShards],
// [Store.RecoverPoisoned] and [Store.Close] do constant work per shard,
// one shard at a time.
//
// The exception is growth. The insert that finds a shard's storage full
// (its index three quarters full, its slots or its expiry heap at
// capacity) grows it under the lock, to about twice the size: work in
// proportion to the keys the shard holds, once per doubling, so a spray of
// new keys pays it while it fills a shard, and never again once the shard
// has reached its high-water mark, which it keeps until Close. That pause
// scales with a shard's capacity, MaxKeys/Shards: where tail latency
// matters, use enough shards to keep it small (tens of thousands of keys a
// shard rather than millions).
//
// # Time
//
// The store reads its [Clock] once per admission, after every lock it needs
// is held, and truncates the reading to whole milliseconds. Each shard
// remembers the latest time it has seen and is never evaluated at an earlier
// one, so a clock that moves backwards cannot refill a quota. The default
// clock is the process's monotonic clock; tests and demos use a
// [ManualClock]:
//
//	clock := memory.NewManualClock()
//	store, err := memory.New(memory.Config{MaxKeys: 1_000, Clock: clock})
//	clock.Advance(time.Minute)
//
// Reading the monotonic clock is about a third of a single check's cost.
// A [CoarseClock], advanced by a goroutine and read from memory, saves it
// on the common check of a stored key in a running window: the store still
// starts and renews windows at the exact time and decides every denial
// there, so lag only counts a check arriving up to a millisecond (plus
// scheduling delay) after its window's end in that window. See its
// documentation.
//
// # Batches
//
// A batch locks the shards of its keys in ascending shard order, so batches
// naming the same keys in any order cannot deadlock, and stores its counters
// only if every check is allowed. A single check ([Store.AdmitCheck]) and a
// batch of one given to [Store.Admit] run the same code: the optimistic
// path below when it applies, and otherwise the batch flow, as a batch of
// one on the stack ([domain.Batch.ResetSingle]): one lock-and-poison guard,
// one clock floor, one cleanup, one commit rule. New keys of a batch take the free slots of
// their shard in caller order. A batch with more keys on one shard than that
// shard can ever hold is rejected before any lock with a
// [*ShardOverflowError], which matches [domain.ErrInvalidInput].
//
// # Checks of stored keys
//
// The common single check, of a key its shard already holds in an active
// window with nothing on the shard to clean up, takes its entry's own lock
// instead of the shard's, and applies the domain's rules for one check
// to the entry's counter in place ([domain.EvaluateCounter]) without
// building a batch. It runs the same steps on that one key (lock, clock
// sample raised to the shard's latest time, observation, the domain's
// evaluation, the write of a counter that keeps its window), so checks of
// different keys on different cores write no memory in common (but the
// shard's latest time, once a millisecond), and each core keeps its keys'
// cache lines. Anything else (a new key, a renewal, cleanup
// due, a batch, a closed or poisoned store) goes through the shard's lock.
// A holder of that lock announces itself before it reads or changes
// anything, and reads and writes a counter only under its entry's lock, so
// an optimistic check either finishes before it sees the counter or steps
// aside to the locked flow: both paths count every check exactly once.
// A panic with an entry's lock held poisons the shard, as above.
//
// # Failures
//
// Every error fails closed and consumed nothing:
// [ports.MayHaveConsumedQuota] answers false for all of them. If a panic
// strikes while shards or an entry are locked (a panicking [Clock], say),
// those shards are marked poisoned before the panic goes on: their counters
// may be half-changed, so every later operation touching them fails with a
// [*PoisonedShardError] naming the shard, while other shards keep working.
// With the default single shard that is the whole store. Alert on it
// ([Store.PoisonedShards] suits a readiness check) and recover explicitly
// with [Store.RecoverPoisoned], which empties only the poisoned shards.
// After [Store.Close], admissions, cleanups and stats fail with an error
// matching [ErrClosed], even when their context is done as well, so that
// a caller shutting down hears that the store is closed (as
// [ports.Closer] documents); a nil context, invalid input or a negative
// cleanup maximum is still reported as the caller's mistake.
//
// [Store.Stats] reports entries, capacity and each shard's free slots.
// Nothing the store prints or reports (errors, stats, the store itself)
// contains key bytes.
package memory
