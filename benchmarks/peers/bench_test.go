package peers_test

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/runlimit/runlimit/benchmarks/peers"
)

// Every benchmark runs each contender as a sub-benchmark named lib=<id>, in
// one run, so that their numbers are side by side. Each builds a fresh
// limiter, checks every key once before the timer starts, times only
// allowed checks (a denial fails the benchmark) and then reads each key
// back to prove that every timed check was counted on its own key.

const (
	// keys10k is the key count of BenchmarkKeys10k.
	keys10k = 10_000
	// keysPerGoroutine is how many keys of its own each goroutine of
	// BenchmarkParallel cycles through: many clients per core, spread over
	// every shard.
	keysPerGoroutine = 1_024
	// retainedKeys is the key count of BenchmarkRetained.
	retainedKeys = 1_000_000
)

// BenchmarkHotKey checks one key over and over. Run with -cpu 1.
func BenchmarkHotKey(b *testing.B) {
	for _, c := range peers.Contenders() {
		b.Run("lib="+c.ID, func(b *testing.B) { benchHotKey(b, c) })
	}
}

// BenchmarkKeys10k checks 10,000 keys round-robin. Run with -cpu 1.
func BenchmarkKeys10k(b *testing.B) {
	for _, c := range peers.Contenders() {
		b.Run("lib="+c.ID, func(b *testing.B) { benchKeys10k(b, c) })
	}
}

// BenchmarkParallel runs one goroutine per GOMAXPROCS, each cycling
// through keysPerGoroutine keys of its own. Run with -cpu 2.
func BenchmarkParallel(b *testing.B) {
	for _, c := range peers.Contenders() {
		b.Run("lib="+c.ID, func(b *testing.B) { benchParallel(b, c) })
	}
}

func benchHotKey(b *testing.B, c peers.Contender) {
	subjects := peers.Subjects(0, 1)
	l := newLimiter(b, c, subjects)
	before := warm(b, l, subjects)
	n, denied := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		if !l.Allow(0) {
			denied++
		}
		n++
	}
	requireAllAllowed(b, denied, n)
	requireCounted(b, l, subjects, before, func(int) int64 { return int64(n) })
}

func benchKeys10k(b *testing.B, c peers.Contender) {
	subjects := peers.Subjects(0, keys10k)
	l := newLimiter(b, c, subjects)
	before := warm(b, l, subjects)
	n, denied, i := 0, 0, 0
	b.ReportAllocs()
	for b.Loop() {
		if !l.Allow(i) {
			denied++
		}
		if i++; i == keys10k {
			i = 0
		}
		n++
	}
	requireAllAllowed(b, denied, n)
	requireCounted(b, l, subjects, before, roundRobin(n, keys10k))
}

func benchParallel(b *testing.B, c peers.Contender) {
	procs := runtime.GOMAXPROCS(0)
	subjects := peers.Subjects(0, procs*keysPerGoroutine)
	l := newLimiter(b, c, subjects)
	before := warm(b, l, subjects)
	checks := make([]int, procs)
	denied := make([]int, procs)
	var next atomic.Int64
	var extra atomic.Bool
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := int(next.Add(1) - 1)
		if g >= procs {
			// RunParallel starts GOMAXPROCS goroutines; one more
			// would have no keys of its own.
			extra.Store(true)
			return
		}
		first := g * keysPerGoroutine
		n, d, k := 0, 0, 0
		for pb.Next() {
			if !l.Allow(first + k) {
				d++
			}
			if k++; k == keysPerGoroutine {
				k = 0
			}
			n++
		}
		checks[g], denied[g] = n, d
	})
	b.StopTimer()
	if extra.Load() {
		b.Fatalf("RunParallel started more than %d goroutines", procs)
	}
	total, totalDenied := 0, 0
	for g := range procs {
		total += checks[g]
		totalDenied += denied[g]
	}
	requireAllAllowed(b, totalDenied, total)
	requireCounted(b, l, subjects, before, func(i int) int64 {
		g := i / keysPerGoroutine
		return roundRobin(checks[g], keysPerGoroutine)(i % keysPerGoroutine)
	})
}

// BenchmarkRetained reports the heap a limiter retains per tracked key
// (B/key) once it holds retainedKeys keys. Run with -benchtime 1x; its
// ns/op is the whole measurement's and means nothing.
//
// Runlimit runs once, as runlimit-hmac: how a key is derived does not
// change what the store keeps.
func BenchmarkRetained(b *testing.B) {
	for _, c := range peers.Contenders() {
		if c.ID == peers.Runlimit || c.ID == peers.RunlimitCoarse {
			continue
		}
		b.Run("lib="+c.ID, func(b *testing.B) {
			var perKey float64
			for b.Loop() {
				perKey = retained(b, c)
			}
			b.ReportMetric(perKey, "B/key")
		})
	}
}

// retained fills a fresh limiter with retainedKeys keys and returns the
// growth of the live heap per key, measured after a collection with the
// limiter still reachable. Each subject string is made inside the
// measurement, so the bytes of a key count when the library keeps the
// caller's string, and are collected when it does not.
func retained(b *testing.B, c peers.Contender) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l, err := c.New(nil)
	if err != nil {
		b.Fatalf("%s: %v", c.ID, err)
	}
	denied := 0
	for i := range retainedKeys {
		if !l.AllowSubject(peers.Subject(i)) {
			denied++
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	requireAllAllowed(b, denied, retainedKeys)

	// Every key has a counter of its own: one more check of each moves
	// each reading by exactly one.
	subjects := peers.Subjects(0, retainedKeys)
	first := readings(b, l, subjects)
	for _, s := range subjects {
		if !l.AllowSubject(s) {
			b.Fatalf("a second check of %s was denied", s)
		}
	}
	requireCounted(b, l, subjects, first, func(int) int64 { return 1 })
	runtime.KeepAlive(l)
	l.Close()
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / retainedKeys
}
