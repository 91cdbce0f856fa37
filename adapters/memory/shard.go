package memory

import (
	"math"
	"sync"
	"unsafe"

	"github.com/runlimit/runlimit/domain"
)

// cacheLinePad is the span a shard is padded to. Two shards never share a
// cache line, nor a pair of lines that adjacent-line prefetchers fetch
// together, so goroutines hitting neighbouring shards do not slow each other.
const cacheLinePad = 128

// shard is one independently locked partition of a [Store].
type shard struct {
	shardState
	_ [cacheLinePad - unsafe.Sizeof(shardState{})%cacheLinePad]byte
}

// shardState is everything a shard guards with its lock.
type shardState struct {
	mu sync.Mutex
	// poisoned is set when a panic unwound through an operation holding mu.
	// The shard's storage may be half-changed, so nothing reads or writes it
	// until RecoverPoisoned empties it.
	poisoned bool
	// capacity is the fixed number of keys the shard may hold.
	capacity int
	// last is the latest time the shard has been evaluated at. Admissions
	// never evaluate it at an earlier time, however the clock moves.
	last domain.Instant
	table
}

func newShardState(capacity int) shardState {
	return shardState{capacity: capacity, last: math.MinInt64, table: newTable(capacity)}
}

// clamp returns the time an operation holding sh's lock evaluates at: t,
// or the latest time sh has seen when t is earlier, which sh then
// remembers. It is the one place where a shard's time is kept from going
// backwards, whatever the clock does. The latest time is written only when
// it moves, so checks on one shard from several cores do not keep taking
// its cache line from each other.
func (sh *shard) clamp(t domain.Instant) domain.Instant {
	if t <= sh.last {
		return sh.last
	}
	sh.last = t
	return t
}

// due reports whether the locked shard holds an entry expired at now: the
// common case, nothing to clean up, costs a check no call.
func (sh *shard) due(now domain.Instant) bool {
	return len(sh.heap) > 0 && sh.heap[0].expires <= now
}

// observe reads k, whose digest is h, for an admission, after cleanup, and
// reports it to b as check i. pending is the number of new keys that
// earlier checks of the same batch have already claimed on this shard: new
// keys take the free slots in caller order. It returns k's slot (-1 when
// absent) and whether k claims a free slot.
func (sh *shard) observe(b *domain.Batch, i int, k *domain.CounterKey, h uint64, pending int) (int32, bool) {
	if slot, ok := sh.find(k, h); ok {
		// Present, even if expired: an expired entry is renewed in place
		// and needs no new slot.
		b.Observe(i, domain.Observation{Counter: sh.entries[slot].counter})
		return slot, false
	}
	if sh.len()+pending < sh.capacity {
		b.Observe(i, domain.Observation{})
		return -1, true
	}
	o := domain.Observation{Full: true}
	o.EarliestExpiry, o.HasEarliestExpiry = sh.earliest()
	b.Observe(i, o)
	return -1, false
}

// add persists the committed counter of a new key k, whose digest is h,
// for which observe claimed a free slot. (A key observe found is updated in
// its slot.)
func (sh *shard) add(k *domain.CounterKey, h uint64, c domain.Counter) {
	if sh.len() >= sh.capacity {
		// observe promised a free slot; breaking that promise would break
		// the hard bound. Panicking here poisons the shard: fail closed.
		panic("runlimit: memory store shard over capacity")
	}
	sh.insert(k, h, c)
}

// headroom returns the free slots, or 0 when poisoned: a poisoned shard
// admits nothing.
func (sh *shard) headroom() int {
	if sh.poisoned {
		return 0
	}
	return sh.capacity - sh.len()
}
