package memory

// The expiry heap of a [table]: a binary min-heap of heapNode ordered by
// expiry, written out by hand because container/heap would box every value
// in an interface and cost an allocation-free hot path its speed. Each move
// updates the moved slot's position in table.pos.

// place puts node at heap position pos and records the position for its
// slot.
func (t *table) place(pos int, node heapNode) {
	t.heap[pos] = node
	t.pos[node.slot] = int32(pos)
}

// up moves the node at pos towards the root while it expires before its
// parent, and reports whether it moved.
func (t *table) up(pos int) bool {
	node := t.heap[pos]
	start := pos
	for pos > 0 {
		parent := (pos - 1) / 2
		if t.heap[parent].expires <= node.expires {
			break
		}
		t.place(pos, t.heap[parent])
		pos = parent
	}
	t.place(pos, node)
	return pos != start
}

// down moves the node at pos towards the leaves while a child expires
// before it, and reports whether it moved.
func (t *table) down(pos int) bool {
	node := t.heap[pos]
	start := pos
	n := len(t.heap)
	for {
		child := 2*pos + 1
		if child >= n {
			break
		}
		if right := child + 1; right < n && t.heap[right].expires < t.heap[child].expires {
			child = right
		}
		if node.expires <= t.heap[child].expires {
			break
		}
		t.place(pos, t.heap[child])
		pos = child
	}
	t.place(pos, node)
	return pos != start
}

// fix restores the heap order after the node at pos changed its expiry.
func (t *table) fix(pos int) {
	if !t.down(pos) {
		t.up(pos)
	}
}

// popMin removes the root, the earliest expiry, and returns its slot.
func (t *table) popMin() int32 {
	root := t.heap[0].slot
	last := len(t.heap) - 1
	if last > 0 {
		t.place(0, t.heap[last])
	}
	t.heap = t.heap[:last]
	if last > 0 {
		t.down(0)
	}
	return root
}
