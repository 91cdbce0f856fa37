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

// observe reads k for an admission, after cleanup. pending is the number of
// new keys that earlier checks of the same batch have already claimed on
// this shard: new keys take the free slots in caller order. It returns k's
// slot (-1 when absent), what to report to the batch, and whether k claims a
// free slot.
func (sh *shard) observe(k domain.CounterKey, pending int) (int32, domain.Observation, bool) {
	if slot, ok := sh.lookup(&k); ok {
		// Present, even if expired: an expired entry is renewed in place
		// and needs no new slot.
		return slot, domain.Observation{Counter: sh.counter(slot)}, false
	}
	if sh.len()+pending < sh.capacity {
		return -1, domain.Observation{}, true
	}
	o := domain.Observation{Full: true}
	o.EarliestExpiry, o.HasEarliestExpiry = sh.earliest()
	return -1, o, false
}

// store persists a committed counter for k, found at slot by observe.
func (sh *shard) store(k domain.CounterKey, slot int32, c domain.Counter) {
	if slot >= 0 {
		sh.update(slot, c)
		return
	}
	if sh.len() >= sh.capacity {
		// observe promised a free slot; breaking that promise would break
		// the hard bound. Panicking here poisons the shard: fail closed.
		panic("runlimit: memory store shard over capacity")
	}
	sh.insert(k, c)
}

// headroom returns the free slots, or 0 when poisoned: a poisoned shard
// admits nothing.
func (sh *shard) headroom() int {
	if sh.poisoned {
		return 0
	}
	return sh.capacity - sh.len()
}
