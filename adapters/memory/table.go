package memory

import (
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/runlimit/runlimit/domain"
)

// maxIndexHint bounds the size hint a shard's index is created with, so a
// store sized for millions of keys does not allocate them all up front; the
// index grows on demand up to the shard's capacity. It is small because an
// index is only as compact as its first array: a shard holding 150 keys in
// an array sized for 1,024 (as in a store of 2,000,000 keys over 64 shards
// holding 10,000) gives each key a cache line of its own, and a check of
// many keys then misses the cache on every cell. Doubling from a small
// array costs a few rehashes of a shard's first keys.
const maxIndexHint = 64

// table is one shard's storage, built without pointers that the garbage
// collector would have to follow beyond a few per shard: an open-addressing
// index from a key's 64-bit digest to a slot number ([index]), the slots
// themselves in chunks that never move, a free list of vacated slots, and a
// min-heap of (expiry, slot) pairs that finds the oldest expiry for
// cleanup. Every stored entry is in both the index and the heap; each entry
// remembers its heap position so a renewed window can be re-sifted in
// place.
//
// A table does not enforce capacity and does no locking of its own: its
// shard does. Its index and its chunks are read without the shard's lock
// by the optimistic path of a single check ([shard.tryEntry]), which is why
// they are published atomically and why an entry's key and counter are
// written only while the entry's own lock is held.
type table struct {
	index index
	// chunks holds each allocated chunk's first entry; the chunk's length
	// follows from its number (chunkSize).
	chunks [maxChunks]atomic.Pointer[entry]
	slots  int32      // slots handed out so far: the chunks hold at least as many
	free   []int32    // vacated slots, reused before a new slot is handed out
	heap   []heapNode // min-heap by expiry
	// pos is each slot's position in heap, so that a renewed window can be
	// re-sifted in place. It belongs to the shard's lock alone. Kept apart
	// from the entries, it makes an entry 96 bytes instead of 104 (a
	// 4-byte field padded to 8) and retains 4 bytes a slot: 3.4 bytes less
	// per tracked key in all.
	pos  []int32
	hint int // initial size of index
}

// entry is one stored counter. The key is kept so that a lookup can confirm
// a digest's match, and so that cleanup, which finds entries through the
// heap, can delete them from the index.
//
// mu guards key and counter against the optimistic path: whoever writes
// either holds it, and the optimistic path reads them only while holding
// it. Its position in the expiry heap is kept in [table.pos].
type entry struct {
	mu      sync.Mutex
	key     domain.CounterKey
	counter domain.Counter
}

// heapNode duplicates the entry's expiry so that sifting compares values
// held in the heap's own contiguous memory instead of chasing slots.
type heapNode struct {
	expires domain.Instant
	slot    int32
}

// Slots live in chunks that are allocated once and never move, so that a
// pointer to an entry stays valid while the table grows: chunk 0 holds
// firstChunk slots and chunk c > 0 holds firstChunk<<(c-1), so the chunks
// double the room like a growing slice but without copying. maxChunks
// chunks hold more than the 2^31 slots a shard can ever have.
const (
	firstChunk = 4
	maxChunks  = 30
)

// chunkOf returns the chunk holding slot and the slot's offset in it.
func chunkOf(slot int32) (c, off int) {
	s := uint32(slot)
	c = bits.Len32(s / firstChunk)
	if c == 0 {
		return 0, int(s)
	}
	return c, int(s - firstChunk<<(c-1))
}

// chunkSize returns how many slots chunk c holds.
func chunkSize(c int) int {
	if c == 0 {
		return firstChunk
	}
	return firstChunk << (c - 1)
}

// entry returns slot's entry, for the holder of the shard's lock. The slot
// must have been handed out, so its chunk is allocated.
func (t *table) entry(slot int32) *entry {
	c, off := chunkOf(slot)
	return entryAt(t.chunks[c].Load(), off)
}

// entryAt returns the entry off places after first, a chunk's first entry.
// chunkOf keeps off below the chunk's length, so the entry is inside the
// chunk: one pointer load, no slice header, and no bounds to check twice.
func entryAt(first *entry, off int) *entry {
	return (*entry)(unsafe.Add(unsafe.Pointer(first), uintptr(off)*unsafe.Sizeof(entry{})))
}

// entryIfAllocated is entry for a slot read without the shard's lock, which
// may be stale: it returns nil when no chunk holds slot yet.
func (t *table) entryIfAllocated(slot int32) *entry {
	c, off := chunkOf(slot)
	if slot < 0 || c >= maxChunks {
		return nil
	}
	p := t.chunks[c].Load()
	if p == nil {
		return nil
	}
	return entryAt(p, off)
}

func newTable(capacity int) table {
	return table{hint: min(capacity, maxIndexHint)}
}

// len returns the number of stored entries, expired ones included.
func (t *table) len() int { return t.index.count }

// lookup returns the slot of k.
func (t *table) lookup(k *domain.CounterKey) (int32, bool) { return t.find(k, k.Hash64()) }

// find returns the slot of k, whose digest is h, for a caller holding the
// shard's lock. Cells are compared by their part of the digest first, and
// a match is confirmed against the key in its slot, so keys whose digests
// collide stay apart.
func (t *table) find(k *domain.CounterKey, h uint64) (int32, bool) {
	a, ok := t.index.load()
	if !ok {
		return -1, false
	}
	tag := uint32(h)
	for i := h & a.mask; ; i = (i + 1) & a.mask {
		c := cell(a.cells[i].Load())
		if c.empty() {
			return -1, false
		}
		if c.tag() == tag && sameKey(&t.entry(c.slot()).key, k) {
			return c.slot(), true
		}
	}
}

// sameKey reports whether a and b are the same counter key, as a == b
// does, but in line: == on a 64-byte value is a call to the runtime's
// memequal, which costs more than the compare. A key is 64 plain bytes
// without padding, aligned as a uint64 (the checks below fail to compile
// otherwise), so its bytes are equal exactly when its eight words are.
// Only equality is read this way, never a byte's value.
func sameKey(a, b *domain.CounterKey) bool {
	x := (*[2][4]uint64)(unsafe.Pointer(a))
	y := (*[2][4]uint64)(unsafe.Pointer(b))
	return x[0] == y[0] && x[1] == y[1]
}

// A counter key is exactly domain.CounterKeySize bytes and aligned as a
// uint64 is, as sameKey assumes: neither line compiles otherwise.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(domain.CounterKey{})-domain.CounterKeySize]
	_ = [1]struct{}{}[unsafe.Alignof(domain.CounterKey{})-unsafe.Alignof(uint64(0))]
)

// counter returns the counter stored in slot.
func (t *table) counter(slot int32) domain.Counter {
	e := t.entry(slot)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counter
}

// insert stores a new entry for k, whose digest is h. The caller has
// checked that its shard has a free slot and that k is absent.
func (t *table) insert(k *domain.CounterKey, h uint64, c domain.Counter) {
	var slot int32
	if n := len(t.free); n > 0 {
		slot = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		slot = t.newSlot()
	}
	pos := len(t.heap)
	e := t.entry(slot)
	e.mu.Lock()
	e.key, e.counter = *k, c
	e.mu.Unlock()
	t.pos[slot] = int32(pos)
	t.index.add(h, slot, t.hint)
	t.heap = append(t.heap, heapNode{expires: c.Expires, slot: slot})
	t.up(pos)
}

// update replaces the counter of e, the entry in slot, whose lock the
// caller holds. A renewed window moves its expiry, so the entry is re-sifted; an
// active window keeps it and costs nothing.
//
// c comes by value, in registers: copying a counter the domain has just
// written field by field with wider moves would wait on those writes.
func (t *table) update(e *entry, slot int32, c domain.Counter) {
	moved := e.counter.Expires != c.Expires
	e.counter = c
	if moved {
		pos := int(t.pos[slot])
		t.heap[pos].expires = c.Expires
		t.fix(pos)
	}
}

// earliest returns the earliest expiry stored, if any entry is.
func (t *table) earliest() (domain.Instant, bool) {
	if len(t.heap) == 0 {
		return 0, false
	}
	return t.heap[0].expires, true
}

// removeExpired removes up to limit entries whose window has ended at now,
// oldest expiry first, and returns how many it removed. Windows are
// half-open: an entry expiring exactly at now is expired.
func (t *table) removeExpired(now domain.Instant, limit int) int {
	n := 0
	for n < limit && len(t.heap) > 0 && t.heap[0].expires <= now {
		slot := t.popMin()
		e := t.entry(slot)
		t.index.remove(e.key.Hash64(), slot)
		e.mu.Lock()
		// Leave no key bytes behind in a vacant slot.
		e.key, e.counter = domain.CounterKey{}, domain.Counter{}
		e.mu.Unlock()
		t.pos[slot] = 0
		t.free = append(t.free, slot)
		n++
	}
	return n
}

// reset drops every entry and releases the memory. An optimistic check
// still holding an entry of the old chunks keeps them alive until it
// returns, and it cannot have validated against the shard once its lock
// holder started.
func (t *table) reset() {
	t.index.arr.Store(nil)
	t.index.mask.Store(0)
	t.index.count = 0
	for c := range t.chunks {
		t.chunks[c].Store(nil)
	}
	t.slots, t.free, t.heap, t.pos = 0, nil, nil, nil
}

// entryPad is how many entries of unused space surround each chunk of
// entries: at least two cache lines, so that no other allocation shares a
// line (or an adjacent-line prefetch pair) with an entry. Every check
// writes its entry; without the pad, shards whose small arrays were
// allocated one after another (as at warm-up) shared lines, and two
// goroutines on two different shards ran at half speed.
const entryPad = (2*cacheLinePad + int(unsafe.Sizeof(entry{})) - 1) / int(unsafe.Sizeof(entry{}))

// newSlot hands out the next slot that was never used, allocating its
// chunk when it is the chunk's first, inside a larger allocation that
// leaves entryPad unused entries before and after it. A chunk is published
// complete, so a reader without the shard's lock sees it whole or not at
// all.
func (t *table) newSlot() int32 {
	slot := t.slots
	c, off := chunkOf(slot)
	if off == 0 {
		size := chunkSize(c)
		buf := make([]entry, size+2*entryPad)
		chunk := buf[entryPad : entryPad+size : entryPad+size]
		t.chunks[c].Store(&chunk[0])
		// The chunks now hold firstChunk<<c slots: pos grows to exactly
		// that, so it retains 4 bytes a slot and no spare capacity.
		t.pos = slices.Grow(t.pos, firstChunk<<c-len(t.pos))
	}
	t.pos = t.pos[:slot+1]
	t.slots++
	return slot
}
