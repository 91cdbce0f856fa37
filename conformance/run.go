package conformance

import (
	"testing"
	"time"

	"github.com/runlimit/runlimit/domain"
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

// PartitionFunc returns the capacity partition a counter key belongs to, 0
// to the store's partition count minus one: the index [ports.Stats.Headroom]
// reports that partition's free slots under.
type PartitionFunc func(k domain.CounterKey) int

// ReplicaFunc opens another store value over the backing data of
// [Instance.Store], as a second replica of the service would open it: its
// own connections, caches and clock clamps, the same data. It may register
// t.Cleanup to close what it opened; the suite does not close the replica.
type ReplicaFunc func(t testing.TB) ports.Store

// Instance is a fresh store and the way to move its time.
type Instance struct {
	// Store is the store under test. Required.
	Store ports.Store
	// Clock is the [ManualClock] the store reads, when the harness could
	// inject one. The suite then moves time with it (Advance may be nil),
	// steps it back in one case to check that the store clamps it, and
	// compares durations exactly (as with ExactTime). (Races are held in the
	// clock read of any ManualClock, given here or not.) Default nil.
	Clock *ManualClock
	// Advance moves Store's time forward. Required unless Clock is set; when
	// both are set the suite calls Advance, which must move Clock. The suite
	// may call it while an admission is held inside a ManualClock read, so
	// it must not wait for the store's locks.
	Advance AdvanceFunc
	// ExactTime reports that the store's clock moves only through Advance,
	// so durations are compared exactly. Otherwise (a database clock that
	// keeps running) a reset or retry is checked as a bound: never more
	// than the exact value, and less only by the real time that has passed
	// since the case began. Implied by Clock. Default false.
	ExactTime bool
	// Partitions is the number of capacity partitions of a store that does
	// not implement [ports.StatsReporter]; a store that does reports
	// [ports.Stats.Shards] instead. Default 1.
	Partitions int
	// PartitionOf maps a counter key to its capacity partition. Required
	// when the store has more than one partition: the suite aims keys at
	// one partition to check its bound exactly, and checks each
	// partition's headroom in [ports.Stats] against the keys it put there.
	// Default nil (one partition).
	PartitionOf PartitionFunc
	// OpenReplica opens a second store over Store's backing data, as
	// another replica of the service would: its own pool, caches and clamps
	// over the same rows (a second Store on the same database and schema).
	// It must read the same clock as Store (the same ManualClock, or the
	// same database's) and offer the same optional capabilities. The
	// replicas scenario uses it to check that the two share their counts,
	// the capacity bound, their locks, cleanup, reset times and Stats. A
	// store whose data lives in its own process (the memory store) leaves
	// it nil: the replica cases are then skipped, and the run's summary
	// says they were not exercised. Default nil.
	OpenReplica ReplicaFunc
	// Require lists the optional capabilities the harness knows the store
	// offers. The suite fails when Store lacks one, so that a wrapper which
	// hides an optional interface (a decorator for metrics or logging) cannot
	// make the suite quietly skip the cases written for it. Default none.
	Require []Capability
}

// NewStoreFunc returns a fresh, empty store honouring opts; it may register
// t.Cleanup. The suite may close the store (when it is a [ports.Closer])
// before those cleanups run.
type NewStoreFunc func(t testing.TB, opts Options) Instance

// Run runs every scenario as a parallel subtest of t, each case on its own
// fresh store from newStore. A failing subtest's name says which guarantee
// broke, and its message says how, followed by the operations the case
// applied to its store.
//
// A first subtest, harness, builds one store to learn its optional
// capabilities and checks the Instance; when it fails, nothing else runs.
// Cases that make single checks run twice, as subtests named AdmitCheck
// (through [ports.CheckAdmitter]) and batch_of_one (through Admit), when
// the store offers the single-check path; otherwise only batch_of_one.
// When every case has run, Run logs which capabilities it found and how
// often it called each, and fails if it never called one it found.
func Run(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	if newStore == nil {
		t.Fatal("conformance: Run needs a NewStoreFunc")
	}
	var caps capabilities
	if !t.Run("harness", func(t *testing.T) { caps = probe(t, newStore) }) {
		return
	}
	if caps.has == nil {
		// -run left the harness subtest out; the cases still need to know
		// the store.
		caps = probe(t, newStore)
	}
	rep := newReport(caps)
	t.Cleanup(func() { rep.summarize(t) })
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range sc.cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					if !tc.single {
						rep.started.Add(1)
						tc.run(t, setup(t, newStore, tc.options(), viaBatchOfOne, caps, rep))
						return
					}
					for _, p := range caps.paths() {
						t.Run(p.String(), func(t *testing.T) {
							t.Parallel()
							rep.started.Add(1)
							tc.run(t, setup(t, newStore, tc.options(), p, caps, rep))
						})
					}
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
	// replica marks a case that needs [Instance.OpenReplica]: it is skipped,
	// and reported as not exercised, when the harness leaves it nil.
	replica bool
	// single marks a case that makes single checks: it runs once per
	// single-check path the store offers.
	single bool
	// opts overrides defaultOptions when set.
	opts Options
	run  func(t *testing.T, f *fixture)
}

// defaultOptions leave room for every batch the suite sends, even on a
// store with several small partitions.
var defaultOptions = Options{Capacity: 64, MaxBatchSize: 8}

// capacityOptions keep partitions small so that filling one takes few keys.
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
		pathsScenario(),
		capacityScenario(),
		cleanupScenario(),
		statsScenario(),
		closeScenario(),
		shadowScenario(),
		concurrencyScenario(),
		timeScenario(),
		contextScenario(),
		anchoringScenario(),
		expiryScenario(),
		readinessScenario(),
		lifetimeScenario(),
		clampScenario(),
		retryScenario(),
		spreadScenario(),
		lookalikesScenario(),
		fingerprintsScenario(),
		churnScenario(),
		resultsScenario(),
		lifecycleScenario(),
		extremesScenario(),
		waitsScenario(),
		sweepScenario(),
		extentsScenario(),
		tiersScenario(),
		samplingScenario(),
		lockWaitsScenario(),
		clampRacesScenario(),
		keyOrderScenario(),
		lastMicroScenario(),
		cleanupClampScenario(),
		lockCyclesScenario(),
		replicasScenario(),
	}
}

// caseCount returns how many subtests Run starts for a store with caps: the
// report checks its counts only when every one of them ran.
func caseCount(caps capabilities) int64 {
	return countCases(caps, func(testCase) bool { return true })
}

// replicaCaseCount returns how many of those subtests need a replica.
func replicaCaseCount(caps capabilities) int64 {
	return countCases(caps, func(tc testCase) bool { return tc.replica })
}

func countCases(caps capabilities, counted func(testCase) bool) int64 {
	n := 0
	for _, sc := range scenarios() {
		for _, tc := range sc.cases {
			if !counted(tc) {
				continue
			}
			if tc.single {
				n += len(caps.paths())
			} else {
				n++
			}
		}
	}
	return int64(n)
}
