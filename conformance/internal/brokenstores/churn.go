package brokenstores

import (
	"slices"

	"github.com/runlimit/runlimit/domain"
)

// index is the per-partition index the ninth hunt's faults keep beside the
// entries map, as a store over an open-addressing table or a slot array
// does: a key its index cannot find is absent to the store, whatever the
// map holds. Only those faults keep it; their defects show only after a
// partition has seen many keys come and go.
type index struct {
	// cells counts the table cells each partition has ever taken
	// (TombstonesFillTable).
	cells []int
	// chains holds the probe chain of each policy in each partition
	// (ProbeStopsAtDeletedCell): a table hashed by the policy's
	// fingerprint alone gives all of a policy's keys one home cell, and a
	// deleted cell stays in the chain as a tombstone, nil.
	chains map[chainID][]*domain.CounterKey
	// slotKeys holds the key in each slot of a partition, slotOf each
	// key's slot, free the free slots and next the bump allocator's next
	// slot (SlotFreedTwiceWhenEmpty, AllocatorRestartsWhenEmpty).
	slotKeys [][]domain.CounterKey
	slotOf   map[domain.CounterKey]int
	free     [][]int
	next     []int
	// heaps is each partition's expiry heap, its earliest end on top
	// (CleanupFiltersHeapInPlace).
	heaps [][]domain.CounterKey
}

// chainID names one probe chain: a partition's table, and the home cell
// of one policy's keys in it.
type chainID struct {
	part int
	fp   domain.Fingerprint
}

func newIndex(partitions int) index {
	return index{
		cells:    make([]int, partitions),
		chains:   make(map[chainID][]*domain.CounterKey),
		slotKeys: make([][]domain.CounterKey, partitions),
		slotOf:   make(map[domain.CounterKey]int),
		free:     make([][]int, partitions),
		next:     make([]int, partitions),
		heaps:    make([][]domain.CounterKey, partitions),
	}
}

// tableCells is how many cells TombstonesFillTable's table has in each
// partition: twice the partition's capacity, a load factor of a half.
func (s *Store) tableCells() int { return 2 * s.cfg.Capacity }

// indexed reports whether the partition's index finds k. The caller holds
// s.mu.
func (s *Store) indexed(k domain.CounterKey) bool {
	p := s.PartitionOf(k)
	switch s.cfg.Fault {
	case ProbeStopsAtDeletedCell:
		for _, c := range s.chains[chainID{p, k.Fingerprint()}] {
			if c == nil {
				// The defect: a deleted cell ends the probe, though keys
				// stored past it are still in the chain.
				return false
			}
			if *c == k {
				return true
			}
		}
		return false
	case SlotFreedTwiceWhenEmpty, AllocatorRestartsWhenEmpty:
		slot, ok := s.slotOf[k]
		return ok && s.slotKeys[p][slot] == k
	}
	return true
}

// insertIndex enters new key k into partition p's index, and reports
// whether the store holds it anywhere. The caller holds s.mu.
func (s *Store) insertIndex(k domain.CounterKey, p int) bool {
	switch s.cfg.Fault {
	case TombstonesFillTable:
		// The defect: a deleted cell is a tombstone no insertion reuses,
		// so once every cell has been taken a new key finds none.
		if s.cells[p] >= s.tableCells() {
			return false
		}
		s.cells[p]++
	case ProbeStopsAtDeletedCell:
		id := chainID{p, k.Fingerprint()}
		for i, c := range s.chains[id] {
			if c == nil {
				s.chains[id][i] = &k
				return true
			}
		}
		s.chains[id] = append(s.chains[id], &k)
	case SlotFreedTwiceWhenEmpty, AllocatorRestartsWhenEmpty:
		var slot int
		switch free := s.free[p]; {
		case len(free) > 0:
			slot, s.free[p] = free[len(free)-1], free[:len(free)-1]
		case s.next[p] < len(s.slotKeys[p]):
			slot = s.next[p]
			s.next[p]++
		default:
			s.slotKeys[p] = append(s.slotKeys[p], domain.CounterKey{})
			slot = len(s.slotKeys[p]) - 1
			s.next[p] = len(s.slotKeys[p])
		}
		s.slotKeys[p][slot], s.slotOf[k] = k, slot
	}
	return true
}

// removeIndex takes k out of its partition's index once its counter is
// removed and the partition counted. The caller holds s.mu.
func (s *Store) removeIndex(k domain.CounterKey) {
	p := s.PartitionOf(k)
	switch s.cfg.Fault {
	case CleanupFiltersHeapInPlace:
		// The defect: cleanup filters the removed counter out of the
		// heap's array, keeping the order of the rest, and never sifts
		// again: what is left need not be a heap.
		s.heaps[p] = slices.DeleteFunc(s.heaps[p], func(h domain.CounterKey) bool { return h == k })
	case ProbeStopsAtDeletedCell:
		id := chainID{p, k.Fingerprint()}
		for i, c := range s.chains[id] {
			if c != nil && *c == k {
				s.chains[id][i] = nil
			}
		}
	case SlotFreedTwiceWhenEmpty, AllocatorRestartsWhenEmpty:
		slot, ok := s.slotOf[k]
		if !ok || s.slotKeys[p][slot] != k {
			return
		}
		delete(s.slotOf, k)
		s.slotKeys[p][slot] = domain.CounterKey{}
		s.free[p] = append(s.free[p], slot)
		if s.stored[p] == 0 {
			if s.cfg.Fault == SlotFreedTwiceWhenEmpty {
				// The defect: the last counter's slot is freed again
				// where the partition's emptying is handled.
				s.free[p] = append(s.free[p], slot)
			} else {
				// The defect: an empty partition restarts its bump
				// allocator at slot 0 but keeps its free list, so both
				// hand out the same slots.
				s.next[p] = 0
			}
		}
	}
}

// heapWrote keeps partition p's expiry heap in order after k's counter was
// written: a new key goes in at the bottom and rises, a renewed one moves
// to its new end (CleanupFiltersHeapInPlace). The caller holds s.mu.
func (s *Store) heapWrote(k domain.CounterKey, p int) {
	h := s.heaps[p]
	i := slices.Index(h, k)
	if i < 0 {
		h = append(h, k)
		i = len(h) - 1
	}
	s.heaps[p] = h
	less := func(a, b int) bool { return s.entries[h[a]].Expires < s.entries[h[b]].Expires }
	for i > 0 && less(i, (i-1)/2) {
		h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
		i = (i - 1) / 2
	}
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && less(c+1, c) {
			c++
		}
		if !less(c, i) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// heapTop returns the end of the counter on top of partition p's expiry
// heap, taken as the partition's earliest (CleanupFiltersHeapInPlace).
// The caller holds s.mu.
func (s *Store) heapTop(p int) (domain.Instant, bool) {
	if len(s.heaps[p]) == 0 {
		return 0, false
	}
	return s.entries[s.heaps[p][0]].Expires, true
}
