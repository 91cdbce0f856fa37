package conformance

import (
	"testing"
	"time"

	"github.com/runlimit/runlimit/ports"
)

// Options are what the suite asks of a fresh store.
type Options struct {
	// Capacity is the hard bound on stored counters in each capacity
	// partition of the store (a single-partition store holds exactly
	// Capacity counters). The suite always sets it; there is no default.
	Capacity int
	// MaxBatchSize is the largest batch the store must accept. The suite
	// always sets it; there is no default.
	MaxBatchSize int
}

// AdvanceFunc moves the store's time forward by d (never backwards). A
// harness may call t.Fatal when it cannot.
type AdvanceFunc func(t testing.TB, d time.Duration)

// Instance is a fresh store and the way to move its time.
type Instance struct {
	// Store is the store under test. Required.
	Store ports.Store
	// Advance moves Store's time forward. Required.
	Advance AdvanceFunc
	// ExactTime reports that the store's clock moves only through Advance,
	// so durations are compared exactly. Otherwise (a database clock that
	// keeps running) a reset or retry is checked as a bound: in (0, window]
	// and lower by at least d after Advance(d). Default false.
	ExactTime bool
	// Partitions is the number of capacity partitions of a store that does
	// not implement [ports.StatsReporter]; a store that does reports
	// [ports.Stats.Shards] instead. It bounds how many new keys the suite
	// adds before it expects a storage-capacity denial. Default 1.
	Partitions int
}

// NewStoreFunc returns a fresh, empty store honouring opts; it may register
// t.Cleanup. The suite may close the store (when it is a [ports.Closer])
// before those cleanups run.
type NewStoreFunc func(t testing.TB, opts Options) Instance

// Run runs every scenario as a parallel subtest of t, each case on its own
// fresh store from newStore. A failing subtest's name says which guarantee
// broke, and its message says how.
func Run(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	if newStore == nil {
		t.Fatal("conformance: Run needs a NewStoreFunc")
	}
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range sc.cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, setup(t, newStore, tc.options()))
				})
			}
		})
	}
}

// scenario is one behaviour: a named group of cases, defined in a file of
// its own.
type scenario struct {
	name  string
	cases []testCase
}

// testCase is one guarantee, checked on a fresh store.
type testCase struct {
	name string
	// opts overrides defaultOptions when set.
	opts Options
	run  func(t *testing.T, f *fixture)
}

// defaultOptions leave room for every batch the suite sends, even on a
// store with several small partitions.
var defaultOptions = Options{Capacity: 64, MaxBatchSize: 8}

// capacityOptions keep partitions small so that filling one takes few keys
// even on a store with hundreds of partitions.
var capacityOptions = Options{Capacity: 4, MaxBatchSize: 8}

func (tc testCase) options() Options {
	if tc.opts == (Options{}) {
		return defaultOptions
	}
	return tc.opts
}

func scenarios() []scenario {
	return []scenario{
		windowsScenario(),
		denialsScenario(),
		batchesScenario(),
		capacityScenario(),
		cleanupScenario(),
		statsScenario(),
		closeScenario(),
		shadowScenario(),
		concurrencyScenario(),
		timeScenario(),
	}
}
