package conformance_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/runlimit/runlimit/conformance"
	"github.com/runlimit/runlimit/conformance/internal/brokenstores"
	"github.com/runlimit/runlimit/ports"
)

// partitions is the partition count of the broken stores: several, so that
// every capacity case aims keys at partitions.
const partitions = 3

// harness builds the suite's own store with fault and every optional
// capability, on a ManualClock handed over the way the README's example
// does, through Advance and ExactTime: a third party's harness finds the
// same bugs as the suite's own.
func harness(fault brokenstores.Fault) conformance.NewStoreFunc {
	return func(_ testing.TB, opts conformance.Options) conformance.Instance {
		clock := new(conformance.ManualClock)
		s := brokenstores.New(brokenstores.Config{Fault: fault, Capacity: opts.Capacity, Partitions: partitions, Clock: clock.Now})
		inst := conformance.Instance{Store: s, Advance: clock.Advance, ExactTime: true, PartitionOf: s.PartitionOf, OpenReplica: replicaOf(s)}
		if steppedBack[fault] {
			// Only a clock handed over as Instance.Clock can be stepped
			// back, which these faults need to show.
			inst.Clock = clock
		}
		return inst
	}
}

// steppedBack are the faults that show only on a clock the suite steps
// back.
var steppedBack = map[brokenstores.Fault]bool{
	brokenstores.TrustsInjectedClock:        true,
	brokenstores.ClampsOnlyOnCommit:         true,
	brokenstores.ClampKeepsRawTime:          true,
	brokenstores.ClampsFirstPartitionOnly:   true,
	brokenstores.SingleCheckOwnClamp:        true,
	brokenstores.CleanupLowersClamp:         true,
	brokenstores.ClampToleratesJitter:       true,
	brokenstores.ClampComparesMilliseconds:  true,
	brokenstores.CleanupReadsUnclampedClock: true,
	brokenstores.ClampRacyReadModifyWrite:   true,
	brokenstores.CleanupLeavesClampBelow:    true,
	brokenstores.ReplicaClampsOwnClock:      true,
}

// TestRunPassesACorrectStore is the control for TestBrokenStoresAreCaught:
// without a fault, the store they all start from passes, so each failure
// there comes from its fault alone. It passes in every shape the suite
// judges differently: without any optional capability, with all of them on
// several partitions, cleaning expired counters on each check, pausing for
// longer than a second while it holds its locks, and on a clock that keeps
// running.
func TestRunPassesACorrectStore(t *testing.T) {
	t.Parallel()
	all := []conformance.Capability{conformance.CheckAdmitter, conformance.Cleaner, conformance.StatsReporter, conformance.Closer}
	for _, tc := range []struct {
		name string
		new  conformance.NewStoreFunc
	}{
		{"minimal_one_partition", func(_ testing.TB, opts conformance.Options) conformance.Instance {
			clock := new(conformance.ManualClock)
			s := brokenstores.New(brokenstores.Config{Capacity: opts.Capacity, Clock: clock.Now})
			return conformance.Instance{Store: brokenstores.Minimal(s), Clock: clock}
		}},
		{"every_capability_three_partitions", func(_ testing.TB, opts conformance.Options) conformance.Instance {
			clock := new(conformance.ManualClock)
			s := brokenstores.New(brokenstores.Config{Capacity: opts.Capacity, Partitions: partitions, Clock: clock.Now})
			return conformance.Instance{Store: s, Clock: clock, PartitionOf: s.PartitionOf, Require: all, OpenReplica: replicaOf(s)}
		}},
		{"optimistic_single_checks", func(_ testing.TB, opts conformance.Options) conformance.Instance {
			clock := new(conformance.ManualClock)
			s := brokenstores.New(brokenstores.Config{
				Capacity: opts.Capacity, Partitions: partitions, OptimisticSingleChecks: true, Clock: clock.Now,
			})
			return conformance.Instance{Store: s, Clock: clock, PartitionOf: s.PartitionOf, Require: all, OpenReplica: replicaOf(s)}
		}},
		{"cleans_per_check", func(_ testing.TB, opts conformance.Options) conformance.Instance {
			clock := new(conformance.ManualClock)
			s := brokenstores.New(brokenstores.Config{Capacity: opts.Capacity, Partitions: partitions, CleanupPerCheck: 8, Clock: clock.Now})
			return conformance.Instance{Store: s, Clock: clock, PartitionOf: s.PartitionOf, Require: all, OpenReplica: replicaOf(s)}
		}},
		{"pauses_under_its_locks", func(_ testing.TB, opts conformance.Options) conformance.Instance {
			// A store over a network: one round trip, made while it holds
			// its locks, takes longer than the suite waits before it calls
			// racers that stay parked a deadlock. It is slow, not stuck.
			// Only the stores of the case that sends large batches pause,
			// in its race, so that the pauses cost one case's time, not
			// every case's.
			clock := &pausingClock{pause: opts.MaxBatchSize > 8}
			s := brokenstores.New(brokenstores.Config{Capacity: opts.Capacity, Partitions: partitions, Clock: clock.Now})
			return conformance.Instance{Store: s, Clock: &clock.ManualClock, PartitionOf: s.PartitionOf, Require: all, OpenReplica: replicaOf(s)}
		}},
		{"running_clock", func(_ testing.TB, opts conformance.Options) conformance.Instance {
			// The suite's inexact path, the one a database store takes:
			// durations are bounds, and races run free.
			clock := newRunningClock()
			s := brokenstores.New(brokenstores.Config{Capacity: opts.Capacity, Partitions: partitions, Clock: clock.Now})
			return conformance.Instance{Store: s, Advance: clock.Advance, PartitionOf: s.PartitionOf, Require: all, OpenReplica: replicaOf(s)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conformance.Run(t, tc.new)
		})
	}
}

// replicaOf opens a second replica over s's data.
func replicaOf(s *brokenstores.Store) conformance.ReplicaFunc {
	return func(testing.TB) ports.Store { return s.Replica() }
}

// runningClock stands in for a database clock: besides Advance, it runs
// with real time, as a server's clock runs between requests.
type runningClock struct {
	conformance.ManualClock
	origin time.Time
}

func newRunningClock() *runningClock { return &runningClock{origin: time.Now()} }

func (c *runningClock) Now() time.Duration {
	return c.ManualClock.Now() + time.Since(c.origin)
}

// pausingClock is a ManualClock whose third read, made while the store
// holds the locks of an admission, first waits longer than the suite's
// deadlock detection takes to decide, as a round trip to a slow server
// would, when pause is set.
type pausingClock struct {
	conformance.ManualClock
	pause bool
	reads atomic.Int64
}

func (c *pausingClock) Now() time.Duration {
	if c.pause && c.reads.Add(1) == 3 {
		time.Sleep(1500 * time.Millisecond)
	}
	return c.ManualClock.Now()
}
