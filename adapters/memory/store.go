package memory

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// Store is a sharded, hard-bounded, process-local [ports.Store]. It holds at
// most [Config.MaxKeys] counters, never evicts an active one, and applies
// each batch atomically under the locks of the shards it touches. It is safe
// for concurrent use.
//
// A nil *Store, or a zero Store that [New] did not build, holds nothing and
// fails closed like a closed store: its operations return an [OpError]
// matching [ErrClosed] (after reporting invalid input as such) and never
// panic.
type Store struct {
	shards []shard
	// clock is the configured Clock, or nil for the process's monotonic
	// clock measured from origin.
	clock Clock
	// coarse is the clock's ticker when the clock is a CoarseClock: the
	// store then reads its lagging reading only where lag is safe (see
	// CoarseClock) and its exact reading everywhere else.
	coarse   *coarseTicker
	origin   int64 // monotonicNow when New ran
	maxKeys  int
	cleanup  int
	maxBatch int
	closed   atomic.Bool
	// poisoned counts poisoned shards, so that the operations that report
	// them skip a full scan in the common case of none.
	poisoned atomic.Int32
	// sweep rotates the shard CleanupExpired starts from, so a bounded
	// cleanup does not always spend its budget on the first shards.
	sweep atomic.Uint32
	// plans recycles the scratch space of multi-check admissions.
	plans sync.Pool
}

var (
	_ ports.Store         = (*Store)(nil)
	_ ports.Cleaner       = (*Store)(nil)
	_ ports.StatsReporter = (*Store)(nil)
	_ ports.Closer        = (*Store)(nil)
	_ ports.CheckAdmitter = (*Store)(nil)
)

// New builds a store. It returns a [*ConfigError] when cfg is out of bounds.
func New(cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{
		shards:   make([]shard, cfg.Shards),
		clock:    cfg.Clock,
		origin:   monotonicNow(),
		maxKeys:  cfg.MaxKeys,
		cleanup:  cfg.CleanupPerCheck,
		maxBatch: cfg.MaxBatchSize,
	}
	base, extra := cfg.MaxKeys/cfg.Shards, cfg.MaxKeys%cfg.Shards
	for i := range s.shards {
		capacity := base
		if i < extra {
			capacity++
		}
		s.shards[i].init(capacity)
	}
	if c, ok := cfg.Clock.(*CoarseClock); ok {
		s.coarse = c.coarseTicker
	}
	s.plans.New = func() any { return new(plan) }
	return s, nil
}

// shardOf maps a counter key to its shard. Counter keys are a SHA-256
// fingerprint followed by an HMAC subject key, so their bytes are already
// uniform: the key's digest mixes one word of each half, spreading both the
// subjects of one policy and the policies of one subject. The multiply-high
// maps the digest onto the shard count without a division.
func (s *Store) shardOf(k domain.CounterKey) int { return s.shardAt(k.Hash64()) }

// shardAt is shardOf for a key whose digest h is known. The index of a
// shard reads the digest's low bits, so the two stay independent.
func (s *Store) shardAt(h uint64) int {
	if len(s.shards) == 1 {
		return 0
	}
	hi, _ := bits.Mul64(h, uint64(len(s.shards)))
	return int(hi)
}

// sample reads the clock, truncated to whole milliseconds: a CoarseClock's
// exact reading, never its lagging one. Callers clamp it per shard. The
// default clock is read directly rather than through the interface, in
// line where the caller tests s.clock itself (see [Store.sampleMonotonic]):
// this is on every admission's path.
func (s *Store) sample() domain.Instant {
	if s.clock == nil {
		return s.sampleMonotonic()
	}
	var d time.Duration
	if s.coarse != nil {
		d = s.coarse.read()
	} else {
		d = s.clock.Now()
	}
	return truncMillis(d)
}

// truncMillis truncates d to whole milliseconds, towards zero, as
// microseconds.
func truncMillis(d time.Duration) domain.Instant {
	if d >= 0 {
		return wholeMillis(d)
	}
	return domain.InstantOf(d - d%time.Millisecond)
}

// sampleMonotonic is sample for the default clock: the process's monotonic
// clock since origin, which never runs before origin. It is small enough to
// be inlined.
func (s *Store) sampleMonotonic() domain.Instant {
	return wholeMillis(time.Duration(monotonicNow() - s.origin))
}

// wholeMillis truncates a non-negative d to whole milliseconds, as
// microseconds: one division, where InstantOf's general rounding takes
// three.
func wholeMillis(d time.Duration) domain.Instant {
	return domain.Instant(d / time.Millisecond * 1000)
}

// unusable returns why the locked shard i cannot serve op: the store is
// closed, or else the shard is poisoned.
func (s *Store) unusable(op string, i int) error {
	if s.closed.Load() {
		return &OpError{Op: op, Err: ErrClosed}
	}
	return &PoisonedShardError{Shard: i}
}

// poison marks the locked shard i after a panic.
func (s *Store) poison(i int) {
	if sh := &s.shards[i]; !sh.poisoned.Load() {
		sh.poisoned.Store(true)
		s.poisoned.Add(1)
	}
}

// Close releases the store's memory. Later admissions, cleanups and stats
// fail closed with an error matching [ErrClosed] that consumed nothing.
// Admissions already holding their locks finish first. Close is idempotent.
func (s *Store) Close() error {
	if s == nil || s.closed.Swap(true) {
		return nil
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.lockWriter()
		sh.reset()
		sh.unlockWriter()
	}
	return nil
}

// String describes the store's size. It never prints keys.
func (s *Store) String() string {
	if s == nil {
		return "memory.Store(nil)"
	}
	return fmt.Sprintf("memory.Store{MaxKeys: %d, Shards: %d}", s.maxKeys, len(s.shards))
}

// GoString is String.
func (s *Store) GoString() string { return s.String() }

// Format prints s as String does under every verb, so that reflection never
// walks into the shards and prints stored keys.
func (s *Store) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }
