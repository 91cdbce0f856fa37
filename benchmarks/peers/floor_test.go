package peers_test

import (
	"errors"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
	_ "unsafe" // for go:linkname

	"github.com/runlimit/runlimit/benchmarks/peers"
	"github.com/runlimit/runlimit/domain"
)

// The floor is the least a keyed fixed-window check can do in memory and
// keep the memory rules of the SPEC with the default clock: it is not a
// store, only the irreducible part of one check, timed beside the real
// store and go-limiter in the same process.
//
// Per check it reads the monotonic clock (the runtime's, as the store's
// default clock does), truncates it to milliseconds and clamps it to its
// shard's latest time; finds the key's entry through an open-addressing
// index of digest tags, without the shard's lock, and confirms it under the
// entry's own lock against the full 64-byte counter key and the shard's
// sequence number (so that a concurrent cleanup could not hand it a
// recycled entry); tests the shard's poisoned flag and its earliest expiry
// (the per-check cleanup's "nothing to do"); applies the window's
// arithmetic and writes the counter; unlocks. What it leaves out is what
// no check of a stored key in an active window needs: inserts, renewals,
// cleanup itself and growth run under the shard's lock, once per key here,
// and a check that would need them panics (the benchmarks never expire a
// window). It has no validation, no errors, no layers, no interfaces and
// no decision beyond the allowance's three numbers.

//go:linkname floorNanotime runtime.nanotime
func floorNanotime() int64

const (
	floorShards = peers.StoreShards
	floorLimit  = int64(math.MaxInt64 / 2)
	floorWindow = int64(24 * 3600 * 1_000_000) // µs
)

type floorEntry struct {
	mu      sync.Mutex
	key     domain.CounterKey
	used    int64
	start   int64
	expires int64
}

type floorShardState struct {
	mu          sync.Mutex // inserts only, here
	seq         atomic.Uint64
	poisoned    atomic.Bool
	last        atomic.Int64
	firstExpiry atomic.Int64
	mask        uint64
	cells       []atomic.Uint64 // tag<<32 | slot+1, sized up front
	entries     []floorEntry    // sized up front
	n           int
}

type floorShard struct {
	floorShardState
	_ [128 - unsafe.Sizeof(floorShardState{})%128]byte
}

type floorStore struct {
	origin int64
	shards []floorShard
	keys   []domain.CounterKey
	hashes []uint64
}

// floorAllowance is what the floor returns: allowed, remaining, and the
// time until the window resets.
type floorAllowance struct {
	ok        bool
	remaining int64
	resetIn   int64
}

func newFloor(subjects []string) (peers.Limiter, error) {
	hasher, err := domain.NewKeyHasher([]byte("peers: a fixed benchmark secret of 32+ bytes"))
	if err != nil {
		return nil, err
	}
	policy := domain.MustPolicy("bench.floor", "client", domain.MaxLimit, domain.MaxWindow)
	f := &floorStore{origin: floorNanotime(), shards: make([]floorShard, floorShards)}
	// Room for a shard's share of the subjects and then some, at most
	// three quarters full as the store's index: the floor never grows.
	per := len(subjects)/floorShards + len(subjects)/floorShards/2 + 16
	room := 1
	for room*3 < per*4 {
		room *= 2
	}
	for i := range f.shards {
		sh := &f.shards[i]
		sh.last.Store(math.MinInt64)
		sh.firstExpiry.Store(math.MaxInt64)
		sh.mask = uint64(room - 1)
		sh.cells = make([]atomic.Uint64, room)
		sh.entries = make([]floorEntry, per)
	}
	f.keys = make([]domain.CounterKey, len(subjects))
	f.hashes = make([]uint64, len(subjects))
	for i, s := range subjects {
		f.keys[i] = domain.NewCounterKey(policy.Fingerprint(), hasher.KeyString(policy, s))
		f.hashes[i] = f.keys[i].Hash64()
	}
	return f, nil
}

func (f *floorStore) Allow(i int) bool { return f.check(&f.keys[i], f.hashes[i]).ok }

func (f *floorStore) now(sh *floorShard) int64 {
	t := (floorNanotime() - f.origin) / 1_000_000 * 1000
	for {
		last := sh.last.Load()
		if t <= last {
			return last
		}
		if sh.last.CompareAndSwap(last, t) {
			return t
		}
	}
}

func (f *floorStore) check(k *domain.CounterKey, h uint64) floorAllowance {
	hi, _ := bits.Mul64(h, floorShards)
	sh := &f.shards[hi]
	seq := sh.seq.Load()
	if seq&1 != 0 || sh.poisoned.Load() {
		return f.locked(sh, k, h)
	}
	e := sh.lockEntry(k, h, seq)
	if e == nil {
		return f.locked(sh, k, h)
	}
	now := f.now(sh)
	if sh.firstExpiry.Load() <= now || e.used == 0 || now >= e.expires {
		e.mu.Unlock()
		return f.locked(sh, k, h)
	}
	a := floorAllowance{resetIn: e.expires - now}
	if e.used <= floorLimit-1 {
		e.used++
		a.ok = true
	}
	a.remaining = floorLimit - e.used
	e.mu.Unlock()
	return a
}

func (sh *floorShard) lockEntry(k *domain.CounterKey, h uint64, seq uint64) *floorEntry {
	tag := uint32(h)
	for i, n := h&sh.mask, 0; n <= int(sh.mask); i, n = (i+1)&sh.mask, n+1 {
		c := sh.cells[i].Load()
		if c == 0 {
			return nil
		}
		if uint32(c>>32) == tag {
			e := &sh.entries[uint32(c)-1]
			e.mu.Lock()
			if sh.seq.Load() == seq && floorSameKey(&e.key, k) {
				return e
			}
			e.mu.Unlock()
		}
	}
	return nil
}

// floorSameKey compares two counter keys a word at a time, in line (== on
// 64 bytes calls the runtime's memequal).
func floorSameKey(a, b *domain.CounterKey) bool {
	x := (*[8]uint64)(unsafe.Pointer(a))
	y := (*[8]uint64)(unsafe.Pointer(b))
	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3] &&
		x[4] == y[4] && x[5] == y[5] && x[6] == y[6] && x[7] == y[7]
}

// locked inserts a new key under the shard's lock; it is the only slow
// path the benchmarks take, once per key.
func (f *floorStore) locked(sh *floorShard, k *domain.CounterKey, h uint64) floorAllowance {
	sh.mu.Lock()
	sh.seq.Add(1)
	defer func() {
		sh.seq.Add(1)
		sh.mu.Unlock()
	}()
	now := f.now(sh)
	for i := h & sh.mask; ; i = (i + 1) & sh.mask {
		c := sh.cells[i].Load()
		if c == 0 {
			break
		}
		if e := &sh.entries[uint32(c)-1]; uint32(c>>32) == uint32(h) && floorSameKey(&e.key, k) {
			panic("floor: a stored key took the locked path")
		}
	}
	slot := sh.n
	if slot == len(sh.entries) {
		panic("floor: a shard is full")
	}
	sh.n++
	e := &sh.entries[slot]
	e.mu.Lock()
	e.key, e.used, e.start, e.expires = *k, 1, now, now+floorWindow
	e.mu.Unlock()
	i := h & sh.mask
	for sh.cells[i].Load() != 0 {
		i = (i + 1) & sh.mask
	}
	sh.cells[i].Store(uint64(uint32(h))<<32 | uint64(slot+1))
	if now+floorWindow < sh.firstExpiry.Load() {
		sh.firstExpiry.Store(now + floorWindow)
	}
	return floorAllowance{ok: true, remaining: floorLimit - 1, resetIn: floorWindow}
}

func (f *floorStore) AllowSubject(string) bool { panic("floor: keys are derived up front") }

func (f *floorStore) Counted(s string) (int64, error) {
	for i := range f.keys {
		if peers.Subject(i) == s {
			k, h := &f.keys[i], f.hashes[i]
			hi, _ := bits.Mul64(h, floorShards)
			sh := &f.shards[hi]
			e := sh.lockEntry(k, h, sh.seq.Load())
			if e == nil {
				return 0, nil
			}
			defer e.mu.Unlock()
			return e.used, nil
		}
	}
	return 0, errors.New("floor: unknown subject")
}

func (f *floorStore) Tracked() (int, bool) {
	n := 0
	for i := range f.shards {
		n += f.shards[i].n
	}
	return n, true
}

func (f *floorStore) Close() {}

// floorContenders are the rows of the floor benchmarks: the floor, the
// store and limiter path as the peer benchmarks drive it, and go-limiter.
func floorContenders() []peers.Contender {
	rows := []peers.Contender{{ID: "floor", New: newFloor}}
	for _, c := range peers.Contenders() {
		if c.ID == peers.Runlimit || c.ID == peers.GoLimiter {
			rows = append(rows, c)
		}
	}
	return rows
}

// BenchmarkFloorHotKey, BenchmarkFloorKeys10k and BenchmarkFloorParallel
// run the floor beside Runlimit and go-limiter in the scenarios of
// BenchmarkHotKey, BenchmarkKeys10k and BenchmarkParallel (-cpu 2).
func BenchmarkFloorHotKey(b *testing.B) {
	for _, c := range floorContenders() {
		b.Run("lib="+c.ID, func(b *testing.B) { benchHotKey(b, c) })
	}
}

func BenchmarkFloorKeys10k(b *testing.B) {
	for _, c := range floorContenders() {
		b.Run("lib="+c.ID, func(b *testing.B) { benchKeys10k(b, c) })
	}
}

func BenchmarkFloorParallel(b *testing.B) {
	for _, c := range floorContenders() {
		b.Run("lib="+c.ID, func(b *testing.B) { benchParallel(b, c) })
	}
}
