package casstore

import (
	"sync"
	"sync/atomic"

	"github.com/runlimit/runlimit/domain"
)

// table stands in for the backend an optimistic adapter talks to: versioned
// rows, a consistent read of several rows, and an atomic write that applies
// only if every row it names still has the version it was read at (Redis
// WATCH and MULTI/EXEC, a DynamoDB transaction with condition checks, SQL
// UPDATE ... WHERE version = $n). Its mutex is the backend's own atomicity,
// held for one read or one write; the store never holds anything across
// an admission.
type table struct {
	mu      sync.Mutex
	seq     uint64 // the last version handed out: a row never gets an old version back
	entries map[domain.CounterKey]entry
	slots   occupancy
	// last is the latest time any store over the table read, as a
	// domain.Instant: the floor under every replica's clock.
	last atomic.Int64
}

// entry is one versioned counter. Version 0 is an absent row.
type entry struct {
	version uint64
	counter domain.Counter
}

// occupancy is the versioned number of stored counters, the row every new
// key and every cleanup changes, so that the capacity bound holds under
// concurrent writers.
type occupancy struct {
	version uint64
	n       int64
}

// cell is an entry as a read saw it.
type cell struct {
	key domain.CounterKey
	entry
}

// snapshot is one consistent read: some entries and the occupancy.
type snapshot struct {
	cells []cell
	slots occupancy
}

func newTable() *table {
	return &table{entries: make(map[domain.CounterKey]entry)}
}

// read fills into with the entries of keys, in order, and the occupancy, as
// they stood at one instant.
func (t *table) read(keys []domain.CounterKey, into *snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	into.cells = into.cells[:0]
	for _, k := range keys {
		into.cells = append(into.cells, cell{key: k, entry: t.entries[k]})
	}
	into.slots = t.slots
}

// expired reads up to n entries that have expired at now, in no particular
// order, and the occupancy, as they stood at one instant.
func (t *table) expired(now domain.Instant, n int, into *snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	into.cells = into.cells[:0]
	for k, e := range t.entries {
		if len(into.cells) == n {
			break
		}
		if !e.counter.Active(now) {
			into.cells = append(into.cells, cell{key: k, entry: e})
		}
	}
	into.slots = t.slots
}

// change is one write of a conditional write: a new counter for key, or
// the removal of key.
type change struct {
	key     domain.CounterKey
	counter domain.Counter
	remove  bool
}

// commit applies changes, and sets the occupancy to slots when withSlots is
// set, only if every entry seen read (and the occupancy, when withSlots)
// still has the version seen read it at. It reports whether it applied
// them: false is a conflict, and the caller reads again.
func (t *table) commit(seen *snapshot, withSlots bool, slots int64, changes []change) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range seen.cells {
		if t.entries[c.key].version != c.version {
			return false
		}
	}
	if withSlots && t.slots.version != seen.slots.version {
		return false
	}
	for _, c := range changes {
		if c.remove {
			delete(t.entries, c.key)
			continue
		}
		t.seq++
		t.entries[c.key] = entry{version: t.seq, counter: c.counter}
	}
	if withSlots && slots != t.slots.n {
		t.seq++
		t.slots = occupancy{version: t.seq, n: slots}
	}
	return true
}

// stored returns the number of stored counters.
func (t *table) stored() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.slots.n
}

// floor returns now, or the latest time read before it when that is later,
// and records it as the latest.
func (t *table) floor(now domain.Instant) domain.Instant {
	for {
		last := t.last.Load()
		if int64(now) <= last {
			return domain.Instant(last)
		}
		if t.last.CompareAndSwap(last, int64(now)) {
			return now
		}
	}
}
