package memory

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// checkTable reports the first broken invariant of t: every indexed key has
// one slot holding it and one heap node pointing at that slot with its
// expiry; the heap is ordered; vacant slots are on the free list, cleared.
func checkTable(t *table) error {
	if t.len() != len(t.heap) {
		return fmt.Errorf("%d indexed entries, %d heap nodes", t.len(), len(t.heap))
	}
	if len(t.pos) != int(t.slots) {
		return fmt.Errorf("%d heap positions for %d slots", len(t.pos), t.slots)
	}
	if t.len()+len(t.free) != int(t.slots) {
		return fmt.Errorf("%d indexed + %d free slots != %d slots", t.len(), len(t.free), t.slots)
	}
	for slot := range t.slots {
		if t.entryIfAllocated(slot) == nil {
			return fmt.Errorf("slot %d was handed out but no chunk holds it", slot)
		}
	}
	slots := make(map[int32]domain.CounterKey, t.len())
	used := 0
	var cells []cell
	if a, ok := t.index.load(); ok {
		for i := range a.cells {
			cells = append(cells, cell(a.cells[i].Load()))
		}
	}
	for _, c := range cells {
		if c.empty() {
			continue
		}
		used++
		slot := c.slot()
		if slot < 0 || slot >= t.slots {
			return fmt.Errorf("slot %d out of range", slot)
		}
		if _, dup := slots[slot]; dup {
			return fmt.Errorf("slot %d is indexed twice", slot)
		}
		k := t.entry(slot).key
		if c.tag() != uint32(k.Hash64()) {
			return fmt.Errorf("slot %d is indexed under another key's digest", slot)
		}
		if found, ok := t.lookup(&k); !ok || found != slot {
			return fmt.Errorf("slot %d cannot be reached from its digest's home", slot)
		}
		slots[slot] = k
	}
	if used != t.index.count {
		return fmt.Errorf("%d cells in use, the index counts %d", used, t.index.count)
	}
	if n := len(cells); n > 0 && (n&(n-1) != 0 || used*4 > n*3) {
		return fmt.Errorf("%d cells in use of %d: not a power of two or over three quarters full", used, n)
	}
	for slot, k := range slots {
		e := t.entry(slot)
		if e.key != k {
			return fmt.Errorf("slot %d holds another key", slot)
		}
		pos := t.pos[slot]
		if pos < 0 || int(pos) >= len(t.heap) || t.heap[pos].slot != slot {
			return fmt.Errorf("slot %d has a wrong heap position %d", slot, pos)
		}
		if t.heap[pos].expires != e.counter.Expires {
			return fmt.Errorf("slot %d expires at %d, its heap node says %d", slot, e.counter.Expires, t.heap[pos].expires)
		}
	}
	for i := 1; i < len(t.heap); i++ {
		if t.heap[(i-1)/2].expires > t.heap[i].expires {
			return fmt.Errorf("heap node %d expires before its parent", i)
		}
	}
	seen := make(map[int32]bool)
	for _, slot := range t.free {
		if seen[slot] || slot < 0 || slot >= t.slots {
			return fmt.Errorf("free slot %d is duplicated or out of range", slot)
		}
		if e := t.entry(slot); e.key != (domain.CounterKey{}) || e.counter != (domain.Counter{}) || t.pos[slot] != 0 {
			return fmt.Errorf("free slot %d is not cleared", slot)
		}
		seen[slot] = true
	}
	return nil
}

func testKey(i int) domain.CounterKey {
	var f domain.Fingerprint
	f[0], f[1] = byte(i), byte(i>>8)
	var s [32]byte
	s[31] = byte(i)
	return domain.NewCounterKey(f, domain.SubjectKeyFromBytes(s))
}

func TestTableKeepsItsInvariantsAndRemovesOldestFirst(t *testing.T) {
	t.Parallel()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 1))
			tb := newTable(64)
			want := map[domain.CounterKey]domain.Instant{} // key -> expiry
			next := 0
			for step := range 1000 {
				switch op := rng.IntN(10); {
				case op < 4 && len(want) < 64:
					k := testKey(next)
					next++
					exp := domain.Instant(rng.IntN(1000) + 1)
					tb.insert(&k, k.Hash64(), domain.Counter{Used: 1, Start: exp - 1, Expires: exp})
					want[k] = exp
				case op < 7 && len(want) > 0:
					k := testKey(next - 1 - rng.IntN(min(next, 8)))
					slot, ok := tb.lookup(&k)
					if !ok {
						continue
					}
					exp := want[k] + domain.Instant(rng.IntN(500)) // renewals only move later
					tb.update(tb.entry(slot), slot, domain.Counter{Used: 2, Start: exp - 1, Expires: exp})
					want[k] = exp
					require.Equal(t, slot, must(tb.lookup(&k)), "an update keeps the slot")
				default:
					now, limit := domain.Instant(rng.IntN(1200)), rng.IntN(5)
					before := len(want)
					n := tb.removeExpired(now, limit)
					require.LessOrEqual(t, n, limit)
					var removed []domain.Instant
					for k, exp := range want {
						if _, ok := tb.lookup(&k); !ok {
							removed = append(removed, exp)
							delete(want, k)
						}
					}
					require.Len(t, removed, n)
					require.Equal(t, before-n, len(want))
					for _, r := range removed {
						require.LessOrEqual(t, r, now, "only expired entries go")
						for _, kept := range want {
							require.LessOrEqual(t, r, kept, "oldest first")
						}
					}
					if n < limit {
						for _, kept := range want {
							require.Greater(t, kept, now, "an expired entry stayed within the allowance")
						}
					}
				}
				require.NoError(t, checkTable(&tb), "step %d", step)
				require.Len(t, want, tb.len())
				if exp, ok := tb.earliest(); ok {
					for _, e := range want {
						require.LessOrEqual(t, exp, e)
					}
				}
			}
		})
	}
}

func must[T any](v T, ok bool) T {
	if !ok {
		panic("must: not ok")
	}
	return v
}

func TestRenewalKeepsTheSlot(t *testing.T) {
	t.Parallel()
	clock := NewManualClock()
	s, err := New(Config{MaxKeys: 3, CleanupPerCheck: 1, Clock: clock})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("renewal-test-secret-of-32-bytes!"))
	require.NoError(t, err)
	admit := func(p domain.Policy) domain.Decision {
		b, err := domain.NewBatch([]domain.Check{domain.NewCheck(p, hasher.KeyString(p, "subject"))}, 1)
		require.NoError(t, err)
		require.NoError(t, s.Admit(context.Background(), b))
		bd, err := b.Decision()
		require.NoError(t, err)
		d, ok := bd.Decision(0)
		require.True(t, ok)
		return d
	}
	older := domain.MustPolicy("renew", "older", 1, time.Second)
	renewed := domain.MustPolicy("renew", "renewed", 1, 2*time.Second)
	admit(older)
	admit(renewed)
	sh := &s.shards[0]
	key := domain.NewCounterKey(renewed.Fingerprint(), hasher.KeyString(renewed, "subject"))
	slot := must(sh.lookup(&key))

	clock.Advance(3 * time.Second)
	require.Equal(t, domain.Allowed, admit(renewed).Outcome())
	// The allowance of one went to the older entry; the renewed one stayed
	// in its slot with a new window and a re-sifted heap node.
	require.Equal(t, 1, sh.len())
	require.Equal(t, slot, must(sh.lookup(&key)))
	require.Equal(t, domain.Counter{Used: 1, Start: 3_000_000, Expires: 5_000_000}, sh.counter(slot))
	require.NoError(t, checkTable(&sh.table))
}

// collidingKeys returns two distinct counter keys with the same digest, as
// no pair of real HMAC keys will ever have in practice: flipping the same
// bits in the first word of the fingerprint and of the subject key leaves
// their XOR unchanged.
func collidingKeys() (domain.CounterKey, domain.CounterKey) {
	var f1, f2 domain.Fingerprint
	var s1, s2 [32]byte
	for i := range f1 {
		f1[i], s1[i] = byte(i), byte(3*i+1)
	}
	f2, s2 = f1, s1
	f2[0] ^= 0x5a
	s2[0] ^= 0x5a
	return domain.NewCounterKey(f1, domain.SubjectKeyFromBytes(s1)), domain.NewCounterKey(f2, domain.SubjectKeyFromBytes(s2))
}

func TestTableDigestCollisionsKeepKeysApart(t *testing.T) {
	t.Parallel()

	a, b := collidingKeys()
	require.NotEqual(t, a, b)
	require.Equal(t, a.Hash64(), b.Hash64(), "the fixture must collide")

	tb := newTable(4)
	tb.insert(&a, a.Hash64(), domain.Counter{Used: 1, Start: 0, Expires: 10})
	_, ok := tb.lookup(&b)
	require.False(t, ok, "a key must not be found through another key's digest")
	tb.insert(&b, b.Hash64(), domain.Counter{Used: 2, Start: 0, Expires: 20})
	require.NoError(t, checkTable(&tb))
	require.Equal(t, 2, tb.len())
	require.Equal(t, int64(1), tb.counter(must(tb.lookup(&a))).Used)
	require.Equal(t, int64(2), tb.counter(must(tb.lookup(&b))).Used)

	// a, the first indexed, expires first: b, placed after it in a's probe
	// run, must stay reachable once a's cell is emptied.
	require.Equal(t, 1, tb.removeExpired(10, 8))
	require.NoError(t, checkTable(&tb))
	_, ok = tb.lookup(&a)
	require.False(t, ok)
	require.Equal(t, int64(2), tb.counter(must(tb.lookup(&b))).Used)

	// A re-inserted a is indexed again beside b.
	tb.insert(&a, a.Hash64(), domain.Counter{Used: 3, Start: 10, Expires: 30})
	require.NoError(t, checkTable(&tb))
	require.Equal(t, int64(3), tb.counter(must(tb.lookup(&a))).Used)
	require.Equal(t, 2, tb.removeExpired(30, 8))
	require.NoError(t, checkTable(&tb))
	require.Equal(t, 0, tb.len())
}

// Slots map onto chunks that double like a growing slice, each chunk
// allocated once, padded, and never moved, so that an entry's address stays
// valid while the table grows.
func TestChunksHoldEverySlotWithoutMoving(t *testing.T) {
	t.Parallel()

	require.GreaterOrEqual(t, entryPad*int(unsafe.Sizeof(entry{})), 2*cacheLinePad,
		"the pad must cover two cache lines on each side")
	var tb table
	var addrs []*entry
	covered := 0
	for c := range 12 {
		require.Equal(t, covered, int(mustChunkStart(t, c)), "chunk %d starts after the last", c)
		covered += chunkSize(c)
	}
	for n := range int32(600) {
		slot := tb.newSlot()
		require.Equal(t, n, slot)
		c, off := chunkOf(slot)
		chunk := tb.chunk(c)
		require.Len(t, chunk, chunkSize(c))
		e := tb.entry(slot)
		require.Same(t, &chunk[off], e)
		e.counter.Used = int64(n) + 1
		addrs = append(addrs, e)
	}
	require.Nil(t, tb.entryIfAllocated(-1))
	require.Nil(t, tb.entryIfAllocated(tb.slots+1024), "no chunk holds a slot beyond the last chunk")
	for i, e := range addrs {
		require.Same(t, e, tb.entry(int32(i)), "slot %d moved", i)
		require.Equal(t, int64(i)+1, e.counter.Used, "growing keeps every entry")
	}
}

// chunk returns chunk c, or nil when it is not allocated.
func (t *table) chunk(c int) []entry {
	p := t.chunks[c].Load()
	if p == nil {
		return nil
	}
	return unsafe.Slice(p, chunkSize(c))
}

// mustChunkStart returns the first slot of chunk c, found through chunkOf.
func mustChunkStart(t *testing.T, c int) int32 {
	t.Helper()
	for slot := int32(0); slot < 1<<20; slot++ {
		if got, off := chunkOf(slot); got == c {
			require.Zero(t, off, "chunk %d's first slot %d must be at offset 0", c, slot)
			return slot
		}
	}
	t.Fatalf("no slot falls in chunk %d", c)
	return 0
}

// homeKey returns a distinct counter key for each i whose digest has the
// same low 32 bits as every other key of i's parity: even keys share the
// first cell as their home, odd keys the last, whatever the index's size.
// Lookups, inserts and removals walk long probe runs, and the odd keys' run
// wraps around the end of the array into the even keys' run.
func homeKey(i int) domain.CounterKey {
	// Keys are masked in memory, and digests read the masked bytes: the
	// zero key's digest is the mask's own low word.
	zero := domain.NewCounterKey(domain.Fingerprint{}, domain.SubjectKeyFromBytes([32]byte{}))
	want := uint32(0)
	if i%2 == 1 {
		want = math.MaxUint32
	}
	var s [32]byte
	binary.LittleEndian.PutUint32(s[:4], want^uint32(zero.Hash64()))
	var f domain.Fingerprint
	f[5], f[6] = byte(i), byte(i>>8)
	return domain.NewCounterKey(f, domain.SubjectKeyFromBytes(s))
}

func TestTableIndexKeepsKeysSharingAHomeReachable(t *testing.T) {
	t.Parallel()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 2))
			k1, k3 := homeKey(1), homeKey(3)
			require.NotEqual(t, k1, k3)
			require.Equal(t, uint32(math.MaxUint32), uint32(k1.Hash64()), "the fixture must share the last home")
			require.Equal(t, uint32(k1.Hash64()), uint32(k3.Hash64()), "the fixture must share a home")
			tb := newTable(4)
			present := map[int]bool{}
			for step := range 600 {
				i := rng.IntN(40)
				k := homeKey(i)
				if present[i] {
					// Expire exactly this key: renew it to the earliest
					// expiry and remove one entry at that time.
					slot := must(tb.lookup(&k))
					tb.update(tb.entry(slot), slot, domain.Counter{Used: 1, Start: -2, Expires: -1})
					require.Equal(t, 1, tb.removeExpired(-1, 1), "step %d", step)
					delete(present, i)
				} else {
					tb.insert(&k, k.Hash64(), domain.Counter{Used: 1, Start: 0, Expires: domain.Instant(step + 1)})
					present[i] = true
				}
				require.NoError(t, checkTable(&tb), "step %d", step)
				for j := range 40 {
					kj := homeKey(j)
					_, ok := tb.lookup(&kj)
					require.Equal(t, present[j], ok, "step %d, key %d", step, j)
				}
			}
		})
	}
}

// TestSameKeyMatchesEquality: the table's word-wise key compare agrees with
// == for keys that differ in any one byte, of either half, and for equal
// keys built apart.
func TestSameKeyMatchesEquality(t *testing.T) {
	t.Parallel()

	var f domain.Fingerprint
	var s [32]byte
	for i := range f {
		f[i], s[i] = byte(7*i+3), byte(5*i+11)
	}
	base := domain.NewCounterKey(f, domain.SubjectKeyFromBytes(s))
	same := domain.NewCounterKey(f, domain.SubjectKeyFromBytes(s))
	require.True(t, sameKey(&base, &same))
	for i := range domain.CounterKeySize {
		f2, s2 := f, s
		if i < len(f2) {
			f2[i] ^= 0x80
		} else {
			s2[i-len(f2)] ^= 0x01
		}
		other := domain.NewCounterKey(f2, domain.SubjectKeyFromBytes(s2))
		require.Equal(t, base == other, sameKey(&base, &other), "byte %d", i)
		require.False(t, sameKey(&base, &other), "byte %d", i)
	}
}
