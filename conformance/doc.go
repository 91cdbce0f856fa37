// Package conformance is the executable definition of a correct Runlimit
// store. Any implementation of [ports.Store] (the memory and PostgreSQL
// adapters, or one a host writes over the cache it already runs) proves it
// keeps every guarantee with one call from its own tests:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(t testing.TB, opts conformance.Options) conformance.Instance {
//			clock := new(conformance.ManualClock)
//			store, err := mystore.New(mystore.Config{Capacity: opts.Capacity, Clock: clock.Now})
//			require.NoError(t, err)
//			return conformance.Instance{Store: store, Advance: clock.Advance, ExactTime: true}
//		})
//	}
//
// Run it under the race detector: go test -race ./...
//
// # The harness
//
// [Run] calls the [NewStoreFunc] once per case, inside that case's parallel
// subtest, and expects a fresh, empty store honouring [Options]: Capacity is
// the hard bound on counters in each capacity partition, and MaxBatchSize
// the largest batch the store must accept. The returned [Instance] also says
// how to move the store's time forward ([AdvanceFunc]).
//
// A store with an injectable clock uses a fake one such as [ManualClock] and
// sets [Instance.ExactTime]: durations are then compared exactly. A store
// whose clock keeps running (a database's) moves time by shifting its stored
// window times back instead, so production code needs no test hook; its
// durations are checked as bounds, positive and never more than the exact
// value. The suite never sleeps: a window ends only because Advance moved
// time past it.
//
// A store with several capacity partitions reports their number through
// [ports.StatsReporter] or [Instance.Partitions]; the suite finds a full
// partition by adding random keys until one is refused, and asserts exact
// counts only where a single partition makes them exact.
//
// # What it checks
//
// Every case is a subtest named scenario/guarantee, and its failure message
// states the guarantee that broke. The scenarios, one file each:
//
//   - windows: anchored fixed windows, exact remaining units and reset
//     times, the retry time of a denial, renewal exactly at the end of a
//     window, one counter per policy fingerprint and subject, costs above
//     one, the largest limit and window;
//   - denials: a quota, storage-capacity or shadow denial consumes nothing;
//   - batches: all-or-nothing, the first failing check in caller order,
//     allowances in caller order, structural errors that never reach the
//     store, and single checks (through [ports.CheckAdmitter] when the store
//     offers it) counting the same counter as batches of one;
//   - capacity: a full partition refuses new keys, never evicts an active
//     one, keeps serving the keys it holds, renews an expired key in place;
//   - cleanup, stats, close: the optional [ports.Cleaner],
//     [ports.StatsReporter] and [ports.Closer], skipped when absent;
//   - shadow: shadow policies count, report and never consume on denial,
//     capacity denials are never shadowed, and switching modes keeps the
//     count;
//   - concurrency: racing checks on one key admit exactly the limit, and
//     batches naming the same keys in opposite orders neither deadlock nor
//     miscount;
//   - time: the store's clock never moves a window backwards.
//
// Every check goes through the engine of
// [github.com/runlimit/runlimit/app.Limiter] (its single-check path, its
// pooled batches), the path hosts use. The suite does not import package
// app itself, which wires in Runlimit's own stores, pgx and fx: importing
// the suite compiles none of them into an adapter's tests.
//
// # Proof that it can fail
//
// The package's own tests run the suite against deliberately broken stores
// (one that consumes on denial, one that is not atomic across a batch, one
// that evicts live keys, one that ignores capacity, one that renews a
// millisecond early or late, one without key locks, one whose clock steps
// back, one that mixes up the order of a batch) and require each to fail in
// the scenario written for its fault.
package conformance
