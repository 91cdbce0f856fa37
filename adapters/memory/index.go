package memory

import (
	"sync/atomic"
	"unsafe"
)

// index is a table's map from a key's 64-bit digest to its slot: open
// addressing with linear probing over a power-of-two array of cells, at
// most three quarters full. A cell holds part of the digest next to the
// slot, so a probe rejects another key's cell without touching its entry,
// and a hit costs one cache line of cells and the entry's own. It holds no
// pointers, and nothing is ever left behind by a removal (no tombstones):
// the cells after a removed one are shifted back into place.
//
// A cell keeps the low 32 bits of the digest: they choose the home position
// (an index never has more than 2^32 cells, as a shard holds fewer than
// 2^31 keys) and tell most other keys apart, in 8 bytes a cell.
//
// Digests alone do not identify keys: the table confirms each digest match
// against the key in the slot, and two keys with one digest simply take two
// cells.
//
// Only the holder of the shard's lock changes an index, but the optimistic
// path of a single check reads it without that lock: each cell is one
// atomic word, so such a reader sees every cell whole. What it finds there
// may be stale; it confirms a find under the entry's lock and the shard's
// sequence number.
type index struct {
	// arr is the first cell of the current generation of cells, nil until
	// the first insert, and mask is that generation's length less one. A
	// grown index gets a new array; readers still probing the old one see
	// it as it was, complete. Both sit in the shard's first cache line,
	// beside its sequence number: a reader without the shard's lock pairs
	// them only after reading the sequence number, even and unchanged,
	// before and after them (see shard.findEntry), so that it never probes
	// one generation's cells with another's mask.
	arr   atomic.Pointer[atomic.Uint64]
	mask  atomic.Uint64
	count int
}

// cellArray is one generation of an index's cells.
type cellArray struct {
	mask  uint64
	cells []atomic.Uint64
}

// load returns the current cells, or ok=false before the first insert, for
// the holder of the shard's lock.
func (x *index) load() (a cellArray, ok bool) {
	p := x.arr.Load()
	if p == nil {
		return cellArray{}, false
	}
	mask := x.mask.Load()
	return cellArray{mask: mask, cells: unsafe.Slice(p, mask+1)}, true
}

// cell is one index position as its atomic word holds it: the low 32 bits
// of the digest above the slot plus one, so that the zero cell is empty and
// a new array needs no initialisation.
type cell uint64

func makeCell(h uint64, slot int32) cell { return cell(uint64(uint32(h))<<32 | uint64(uint32(slot+1))) }

func (c cell) empty() bool  { return uint32(c) == 0 }
func (c cell) tag() uint32  { return uint32(c >> 32) }
func (c cell) slot() int32  { return int32(uint32(c)) - 1 }
func (c cell) home() uint64 { return uint64(c.tag()) }

// cellAt returns cell i of the generation whose first cell is p, for a
// probe without the shard's lock: i is masked by that generation's own mask,
// so it stays inside the allocation, and no slice is built per probe.
func cellAt(p *atomic.Uint64, i uint64) cell {
	return cell((*atomic.Uint64)(unsafe.Add(unsafe.Pointer(p), i*8)).Load())
}

// minCells is the smallest index allocated.
const minCells = 8

// add indexes slot under digest h. hint sizes the first array: room for
// that many keys before it grows.
func (x *index) add(h uint64, slot int32, hint int) {
	a, ok := x.load()
	if !ok || (x.count+1)*4 > len(a.cells)*3 {
		a = x.grow(a, hint)
	}
	a.place(makeCell(h, slot))
	x.count++
}

// place puts c in the first empty cell from its digest's home position.
func (a cellArray) place(c cell) {
	i := c.home() & a.mask
	for !cell(a.cells[i].Load()).empty() {
		i = (i + 1) & a.mask
	}
	a.cells[i].Store(uint64(c))
}

// grow publishes an array of twice the cells of a, or the first one with
// room for hint keys when a has none, holding every cell of a, and returns
// it.
func (x *index) grow(a cellArray, hint int) cellArray {
	n := minCells
	if len(a.cells) > 0 {
		n = 2 * len(a.cells)
	} else {
		for n*3 < hint*4 {
			n *= 2
		}
	}
	grown := cellArray{mask: uint64(n - 1), cells: make([]atomic.Uint64, n)}
	for i := range a.cells {
		if c := cell(a.cells[i].Load()); !c.empty() {
			grown.place(c)
		}
	}
	x.arr.Store(&grown.cells[0])
	x.mask.Store(grown.mask)
	return grown
}

// remove drops slot, indexed under digest h, and shifts the cells of its
// probe run back so that every remaining cell stays reachable from its home
// position.
func (x *index) remove(h uint64, slot int32) {
	a, _ := x.load()
	mask := a.mask
	i := h & mask
	for cell(a.cells[i].Load()).slot() != slot {
		i = (i + 1) & mask
	}
	// i is a hole. A later cell of the run moves into it unless its home
	// lies cyclically after the hole and at or before the cell itself.
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		c := cell(a.cells[j].Load())
		if c.empty() {
			break
		}
		if (j-c.home())&mask >= (j-i)&mask {
			a.cells[i].Store(uint64(c))
			i = j
		}
	}
	a.cells[i].Store(0)
	x.count--
}
