package memory

// index is a table's map from a key's 64-bit digest to its slot: open
// addressing with linear probing over a power-of-two array of cells, at
// most three quarters full. A cell holds the whole digest next to the slot,
// so a probe rejects another key's cell without touching its entry, and a
// hit costs one cache line of cells and one of entries. It holds no
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
type index struct {
	cells []cell
	count int
}

// cell is one index position. ref is the slot plus one, so that the zero
// cell is empty and a new array needs no initialisation.
type cell struct {
	tag uint32 // the low 32 bits of the digest
	ref int32
}

// minCells is the smallest index allocated.
const minCells = 8

// add indexes slot under digest h. hint sizes the first array: room for
// that many keys before it grows.
func (x *index) add(h uint64, slot int32, hint int) {
	if (x.count+1)*4 > len(x.cells)*3 {
		x.grow(hint)
	}
	x.place(cell{tag: uint32(h), ref: slot + 1})
	x.count++
}

// place puts c in the first empty cell from its digest's home position.
func (x *index) place(c cell) {
	mask := uint64(len(x.cells) - 1)
	i := uint64(c.tag) & mask
	for x.cells[i].ref != 0 {
		i = (i + 1) & mask
	}
	x.cells[i] = c
}

// grow doubles the array, or allocates the first one with room for hint
// keys, and re-places every cell.
func (x *index) grow(hint int) {
	n := 2 * len(x.cells)
	if n == 0 {
		n = minCells
		for n*3 < hint*4 {
			n *= 2
		}
	}
	old := x.cells
	x.cells = make([]cell, n)
	for _, c := range old {
		if c.ref != 0 {
			x.place(c)
		}
	}
}

// remove drops slot, indexed under digest h, and shifts the cells of its
// probe run back so that every remaining cell stays reachable from its home
// position.
func (x *index) remove(h uint64, slot int32) {
	mask := uint64(len(x.cells) - 1)
	i := h & mask
	for x.cells[i].ref != slot+1 {
		i = (i + 1) & mask
	}
	// i is a hole. A later cell of the run moves into it unless its home
	// lies cyclically after the hole and at or before the cell itself.
	for j := (i + 1) & mask; x.cells[j].ref != 0; j = (j + 1) & mask {
		home := uint64(x.cells[j].tag) & mask
		if (j-home)&mask >= (j-i)&mask {
			x.cells[i] = x.cells[j]
			i = j
		}
	}
	x.cells[i] = cell{}
	x.count--
}
