package memory

import (
	"unsafe"

	"github.com/runlimit/runlimit/domain"
)

// maxIndexHint bounds the size hint a shard's index is created with, so a
// store sized for millions of keys does not allocate them all up front; the
// index grows on demand up to the shard's capacity.
const maxIndexHint = 1024

// table is one shard's storage, built without pointers that the garbage
// collector would have to follow: an open-addressing index from a key's
// 64-bit digest to a slot number ([index]), the slots themselves, a free
// list of vacated slots, and a min-heap of (expiry, slot) pairs that finds
// the oldest expiry for cleanup. Every stored entry is in both the index
// and the heap; each entry remembers its heap position so a renewed window
// can be re-sifted in place.
//
// A table does not enforce capacity and does no locking: its shard does.
type table struct {
	index   index      // created on the first insert
	entries []entry    // grows on demand, never beyond the shard's capacity
	free    []int32    // vacated slots, reused before entries grows
	heap    []heapNode // min-heap by expiry
	hint    int        // initial size of index
}

// entry is one stored counter. The key is kept so that a lookup can confirm
// a digest's match, and so that cleanup, which finds entries through the
// heap, can delete them from the index.
type entry struct {
	key     domain.CounterKey
	counter domain.Counter
	heapPos int32
}

// heapNode duplicates the entry's expiry so that sifting compares values
// held in the heap's own contiguous memory instead of chasing slots.
type heapNode struct {
	expires domain.Instant
	slot    int32
}

func newTable(capacity int) table {
	return table{hint: min(capacity, maxIndexHint)}
}

// len returns the number of stored entries, expired ones included.
func (t *table) len() int { return t.index.count }

// lookup returns the slot of k.
func (t *table) lookup(k *domain.CounterKey) (int32, bool) { return t.find(k, k.Hash64()) }

// find returns the slot of k, whose digest is h. Cells are compared by
// their part of the digest first, and a match is confirmed against the key
// in its slot, so keys whose digests collide stay apart.
func (t *table) find(k *domain.CounterKey, h uint64) (int32, bool) {
	x := &t.index
	if len(x.cells) == 0 {
		return -1, false
	}
	mask := uint64(len(x.cells) - 1)
	tag := uint32(h)
	for i := h & mask; ; i = (i + 1) & mask {
		c := x.cells[i]
		if c.ref == 0 {
			return -1, false
		}
		if c.tag == tag && sameKey(&t.entries[c.ref-1].key, k) {
			return c.ref - 1, true
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
func (t *table) counter(slot int32) domain.Counter { return t.entries[slot].counter }

// insert stores a new entry for k, whose digest is h. The caller has
// checked that its shard has a free slot and that k is absent.
func (t *table) insert(k *domain.CounterKey, h uint64, c domain.Counter) {
	var slot int32
	if n := len(t.free); n > 0 {
		slot = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		slot = int32(len(t.entries))
		t.entries = growEntries(t.entries)
	}
	pos := len(t.heap)
	t.entries[slot] = entry{key: *k, counter: c, heapPos: int32(pos)}
	t.index.add(h, slot, t.hint)
	t.heap = append(t.heap, heapNode{expires: c.Expires, slot: slot})
	t.up(pos)
}

// update replaces the counter in slot. A renewed window moves its expiry,
// so the entry is re-sifted; an active window keeps it and costs nothing.
//
// c comes by value, in registers: copying a counter the domain has just
// written field by field with wider moves would wait on those writes.
func (t *table) update(slot int32, c domain.Counter) {
	e := &t.entries[slot]
	moved := e.counter.Expires != c.Expires
	e.counter = c
	if moved {
		pos := int(e.heapPos)
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
		e := &t.entries[slot]
		t.index.remove(e.key.Hash64(), slot)
		*e = entry{} // leave no key bytes behind in a vacant slot
		t.free = append(t.free, slot)
		n++
	}
	return n
}

// reset drops every entry and releases the memory.
func (t *table) reset() { *t = table{hint: t.hint} }

// entryPad is how many entries of unused space surround each shard's entry
// array: at least two cache lines, so that no other allocation shares a line
// (or an adjacent-line prefetch pair) with an entry. Every check writes its
// entry; without the pad, shards whose small arrays were allocated one after
// another (as at warm-up) shared lines, and two goroutines on two different
// shards ran at half speed.
const entryPad = (2*cacheLinePad + int(unsafe.Sizeof(entry{})) - 1) / int(unsafe.Sizeof(entry{}))

// growEntries returns entries with one more (zero) entry. It grows the
// array by doubling like append, inside a larger allocation that leaves
// entryPad unused entries before and after it.
func growEntries(entries []entry) []entry {
	n := len(entries)
	if n < cap(entries) {
		return entries[:n+1]
	}
	size := max(2*n, 4)
	buf := make([]entry, size+2*entryPad)
	grown := buf[entryPad : entryPad+n+1 : entryPad+size]
	copy(grown, entries)
	return grown
}
