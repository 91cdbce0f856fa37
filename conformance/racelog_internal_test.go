package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	bs "github.com/runlimit/runlimit/conformance/internal/brokenstores"
	"github.com/runlimit/runlimit/ports"
)

// A store over a server's clock (Redis TIME, a database's now) reads no
// ManualClock, so the races the suite means to hold run freely. The
// operation log of a failed case is what its author debugs from: it must
// say the race ran freely, not that each clock read was held.
func TestRaceLogSaysWhetherClockReadsWereHeld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		clock  func() func() time.Duration
		held   bool
		reject string
	}{
		{"manual_clock", func() func() time.Duration { return new(ManualClock).Now }, true, notHeld},
		{"server_clock", func() func() time.Duration {
			origin := time.Now()
			return func() time.Duration { return 1000*time.Hour + time.Since(origin) }
		}, false, "held until"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			newStore := func(_ testing.TB, opts Options) Instance {
				s := bs.New(bs.Config{Capacity: opts.Capacity, Clock: tc.clock()})
				return Instance{Store: s, Advance: func(testing.TB, time.Duration) {}}
			}
			caps := probe(t, newStore)
			f := setup(t, newStore, defaultOptions, viaBatchOfOne, caps, newReport(caps))
			p := f.policy(10, window)
			ks := f.keysIn(p, 0, 2)
			ws := make([]worker, len(ks))
			for i, k := range ks {
				ws[i] = worker{name: fmt.Sprintf("key %d", i+1), ops: []raceOp{f.checkOp(f.check(p, k), viaBatchOfOne)}}
			}
			results := f.race("race log", true, ws)
			f.logRace("two new keys", true, results)
			f.log.add("%s while CleanupExpired(10) starts", f.heldInClock())
			log := f.log.String()
			require.Equal(t, tc.held, f.raceHeld, "whether the race held its clock reads")
			require.NotContains(t, log, tc.reject)
			if tc.held {
				require.Contains(t, log, "each read of a ManualClock held until the other goroutines waited")
				require.Contains(t, log, "held in the clock read while CleanupExpired(10) starts")
				return
			}
			require.Contains(t, log, "racing freely ("+notHeld+")")
			require.Contains(t, log, "racing while CleanupExpired(10) starts")
		})
	}
}

// A case that finds it does not apply to the store skips, and Run's
// summary counts it: "112 of 112 cases ran" over a store that skipped a
// fifth of them reads as a full pass.
func TestSummaryCountsSkippedCases(t *testing.T) {
	t.Parallel()
	newStore := func(_ testing.TB, opts Options) Instance {
		origin := time.Now()
		s := bs.New(bs.Config{Capacity: opts.Capacity, Clock: func() time.Duration { return time.Since(origin) }})
		return Instance{Store: s, Advance: func(testing.TB, time.Duration) {}}
	}
	caps := probe(t, newStore)
	rep := newReport(caps)
	t.Run("steppable", func(t *testing.T) {
		f := setup(t, newStore, defaultOptions, viaBatchOfOne, caps, rep)
		f.requireSteppableClock() // skips: the store reads no Instance.Clock
	})
	t.Run("applies", func(t *testing.T) {
		setup(t, newStore, defaultOptions, viaBatchOfOne, caps, rep)
	})
	rep.started.Store(2)
	require.Equal(t, int64(1), rep.skipped.Load())
	require.Contains(t, rep.summary(), "2 of "+fmt.Sprint(rep.total)+" cases ran, 1 of them skipped as not applicable")
}

// Run's summary names why cases skipped, grouped by reason, so that an
// author whose store reads a server's clock learns which guarantees to
// review by hand without reading go test -v's output line by line.
func TestSummaryGroupsSkippedCasesByReason(t *testing.T) {
	t.Parallel()
	newStore := func(_ testing.TB, opts Options) Instance {
		origin := time.Now()
		s := bs.New(bs.Config{Capacity: opts.Capacity, Clock: func() time.Duration { return time.Since(origin) }})
		return Instance{Store: s, Advance: func(testing.TB, time.Duration) {}}
	}
	caps := probe(t, newStore)
	rep := newReport(caps)
	for _, name := range []string{"steppable", "steppable_again"} {
		t.Run(name, func(t *testing.T) {
			f := setup(t, newStore, defaultOptions, viaBatchOfOne, caps, rep)
			f.requireSteppableClock() // skips: the store reads no Instance.Clock
		})
	}
	t.Run("running", func(t *testing.T) {
		f := setup(t, newStore, defaultOptions, viaBatchOfOne, caps, rep)
		testShortWindows(t, f) // skips: the store's clock keeps running
	})
	t.Run("unnamed", func(t *testing.T) {
		setup(t, newStore, defaultOptions, viaBatchOfOne, caps, rep)
		t.Skip("a reason the report never saw")
	})
	rep.started.Store(4)
	require.Equal(t, int64(4), rep.skipped.Load())
	require.Contains(t, rep.summary(), "\nskipped cases, by reason:"+
		"\n   2× clamp: the suite steps back only a clock handed over as Instance.Clock, to check that the store clamps it"+
		"\n   1× windows: a clock that keeps running ends a millisecond window by itself; needs an exact clock"+
		"\n   1× for reasons go test -v shows")
}

// A harness without Instance.OpenReplica has every replica case skipped,
// and Run's summary says that nothing checked two replicas over one
// backend; one with it has the cases open replicas, and the summary
// counts them.
func TestSummarySaysWhetherReplicasWereExercised(t *testing.T) {
	t.Parallel()
	harness := func(replicas bool) NewStoreFunc {
		return func(_ testing.TB, opts Options) Instance {
			clock := new(ManualClock)
			s := bs.New(bs.Config{Capacity: opts.Capacity, Clock: clock.Now})
			inst := Instance{Store: s, Clock: clock}
			if replicas {
				inst.OpenReplica = func(testing.TB) ports.Store { return s.Replica() }
			}
			return inst
		}
	}
	for _, replicas := range []bool{false, true} {
		newStore := harness(replicas)
		caps := probe(t, newStore)
		rep := newReport(caps)
		require.Equal(t, int64(len(replicasScenario().cases)+countSingle(replicasScenario())), rep.replicaCases,
			"every replica case, once per single-check path when it makes single checks")
		t.Run(fmt.Sprint("replicas=", replicas), func(t *testing.T) {
			testReplicasShareCounts(t, setup(t, newStore, defaultOptions, viaBatchOfOne, caps, rep))
		})
		if !replicas {
			require.Equal(t, int64(1), rep.skipped.Load(), "the replica case skips without Instance.OpenReplica")
			require.Contains(t, rep.summary(), fmt.Sprintf("Instance.OpenReplica is nil, so the %d replica cases were skipped", rep.replicaCases))
			continue
		}
		require.Zero(t, rep.skipped.Load(), "the replica case runs with Instance.OpenReplica")
		require.Equal(t, int64(1), rep.replicas.Load(), "the case opened one replica")
		require.Contains(t, rep.summary(), "Instance.OpenReplica 1 times")
		require.NotContains(t, rep.summary(), "Instance.OpenReplica is nil")
	}
}

// countSingle counts the cases of sc that make single checks: each runs
// once more, on the single-check path, for a store that offers it.
func countSingle(sc scenario) int {
	n := 0
	for _, tc := range sc.cases {
		if tc.single {
			n++
		}
	}
	return n
}
