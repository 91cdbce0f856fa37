package memory

import (
	"math"
	"sync"
	"sync/atomic"
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
	// seq is odd while a holder of mu may be changing the shard, and moves
	// on by two with every such holder. The optimistic path of a single
	// check trusts what it read of the shard without mu only if seq was even
	// and unchanged from before its first read until it held its entry's
	// lock.
	seq atomic.Uint64
	// poisoned is set when a panic unwound through an operation holding mu
	// or an entry's lock. The shard's storage may be half-changed, so
	// nothing reads or writes it until RecoverPoisoned empties it.
	poisoned atomic.Bool
	// capacity is the fixed number of keys the shard may hold.
	capacity int
	// last is the latest time the shard has been evaluated at. Admissions
	// never evaluate it at an earlier time, however the clock moves.
	last atomic.Int64
	// firstExpiry is the earliest expiry stored (math.MaxInt64 for none), as
	// the last holder of mu left it: the optimistic path reads it to know
	// that no entry of the shard needs cleanup at its time.
	firstExpiry atomic.Int64
	table
}

// The optimistic path reads the shard's sequence number, flags, clock floor,
// earliest expiry and its index's cells and mask from one cache line: the
// line fails to compile if the mask moves out of the first 64 bytes.
var _ = [1]struct{}{}[(unsafe.Offsetof(shardState{}.table)+unsafe.Offsetof(table{}.index)+unsafe.Offsetof(index{}.mask))/64]

// init prepares a shard of the given capacity.
func (sh *shardState) init(capacity int) {
	sh.capacity = capacity
	sh.last.Store(math.MinInt64)
	sh.firstExpiry.Store(math.MaxInt64)
	sh.table = newTable(capacity)
}

// lockWriter takes the shard's lock for an operation that may change it.
func (sh *shard) lockWriter() {
	sh.mu.Lock()
	sh.seq.Add(1)
}

// unlockWriter publishes the earliest expiry and releases lockWriter's
// lock.
func (sh *shard) unlockWriter() {
	e := domain.Instant(math.MaxInt64)
	if len(sh.heap) > 0 {
		e = sh.heap[0].expires
	}
	if domain.Instant(sh.firstExpiry.Load()) != e {
		sh.firstExpiry.Store(int64(e))
	}
	sh.seq.Add(1)
	sh.mu.Unlock()
}

// clamp returns the time an operation on sh evaluates at: t, or the latest
// time sh has seen when t is earlier, which sh then remembers. It is the
// one place where a shard's time is kept from going backwards, whatever
// the clock does, for the holders of its lock and the optimistic path
// alike. The latest time is written only when it moves, so checks on one
// shard from several cores do not keep taking its cache line from each
// other.
func (sh *shard) clamp(t domain.Instant) domain.Instant {
	for {
		last := sh.last.Load()
		if int64(t) <= last {
			return domain.Instant(last)
		}
		if sh.last.CompareAndSwap(last, int64(t)) {
			return t
		}
	}
}

// findEntry returns the entry of the first cell on digest h's probe run
// that carries h's tag, or nil, without the shard's lock and without
// taking the entry's, for the optimistic path: the caller locks the entry
// and confirms it ([shard.holds]). seq is the shard's sequence number read
// before anything else, even. The index's cells and mask are used only if
// seq is unchanged after both were read: they are then one generation's,
// and every probe stays inside that generation's cells. A probe is bounded
// by the cells of the array it reads, so a changing index cannot keep it
// going. Another key with the same tag earlier on the run makes the
// optimistic path step aside, which costs that key only the locked flow.
//
// Its one call, to the entry's lookup, is its last act: the probe keeps
// nothing live across a call, so it spills nothing.
func (sh *shard) findEntry(h uint64, seq uint64) *entry {
	p := sh.index.arr.Load()
	mask := sh.index.mask.Load()
	if p == nil || sh.seq.Load() != seq {
		return nil
	}
	tag := uint32(h)
	i := h & mask
	for range mask + 1 {
		c := cellAt(p, i)
		if c.empty() {
			return nil
		}
		if c.tag() == tag {
			return sh.entryIfAllocated(c.slot())
		}
		i = (i + 1) & mask
	}
	return nil
}

// holds reports, for the optimistic path holding the lock of e, which
// findEntry returned for k's digest under seq, whether e is k's entry and
// the find can be trusted: seq is still unchanged, so no holder of the
// shard's lock changed anything while it ran, and none will touch the
// entry before its lock is released.
func (sh *shard) holds(e *entry, k *domain.Check, seq uint64) bool {
	return sh.seq.Load() == seq && k.HasCounterKey(&e.key)
}

// due reports whether the locked shard holds an entry expired at now: the
// common case, nothing to clean up, costs a check no call.
func (sh *shard) due(now domain.Instant) bool {
	return len(sh.heap) > 0 && sh.heap[0].expires <= now
}

// observe reads the key of pc, check i, for an admission, after cleanup,
// and reports it to b. pending is the number of new keys that earlier
// checks of the same batch have already claimed on this shard: new keys
// take the free slots in caller order. It records the key's slot in pc (-1
// when absent) and, for a stored key, its entry, whose lock it takes: an
// optimistic check that found the entry before the admission began
// finishes first, and none touches it until the admission releases it.
// It reports whether the key claims a free slot.
func (sh *shard) observe(b *domain.Batch, i int, pc *planned, pending int) bool {
	pc.slot, pc.held = -1, nil
	if slot, ok := sh.find(&pc.key, pc.hash); ok {
		// Present, even if expired: an expired entry is renewed in place
		// and needs no new slot.
		e := sh.entry(slot)
		e.mu.Lock()
		pc.slot, pc.held = slot, e
		b.Observe(i, domain.Observation{Counter: e.counter})
		return false
	}
	if sh.len()+pending < sh.capacity {
		b.Observe(i, domain.Observation{})
		return true
	}
	o := domain.Observation{Full: true}
	o.EarliestExpiry, o.HasEarliestExpiry = sh.earliest()
	b.Observe(i, o)
	return false
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
	if sh.poisoned.Load() {
		return 0
	}
	return sh.capacity - sh.len()
}
