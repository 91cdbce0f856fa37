// Package conformance is the executable definition of a correct Runlimit
// store. Any implementation of [ports.Store] (the memory and PostgreSQL
// adapters, or one a host writes over the cache or database it already
// runs) proves it keeps every guarantee with one call from its own tests:
//
//	func TestConformance(t *testing.T) {
//		t.Parallel()
//		conformance.Run(t, func(t testing.TB, opts conformance.Options) conformance.Instance {
//			clock := new(conformance.ManualClock)
//			store, err := mystore.New(mystore.Config{Capacity: opts.Capacity, Clock: clock.Now})
//			require.NoError(t, err)
//			return conformance.Instance{Store: store, Clock: clock}
//		})
//	}
//
// # The harness
//
// [Run] calls the [NewStoreFunc] once per case, inside that case's parallel
// subtest, and expects a fresh, empty store honouring [Options]: Capacity is
// the hard bound on counters in each capacity partition, and MaxBatchSize
// the largest batch the store must accept. The returned [Instance] says how
// to move the store's time forward and what the suite may rely on:
//
//   - Clock: a store with an injectable clock reads a [ManualClock] the
//     suite moves. Durations are then compared exactly, and the suite holds
//     admissions inside their clock read (see Concurrency below), as it
//     does for any store reading a ManualClock.
//   - Advance and ExactTime: a store whose clock keeps running (a
//     database's) moves time by shifting its stored window times back
//     instead, so production code needs no test hook. Its durations are
//     checked as bounds: never more than the exact value, and less only by
//     the real time the case has taken.
//   - Partitions and PartitionOf: a store with several capacity partitions
//     reports their number ([ports.Stats.Shards] or Partitions) and how a
//     key maps to one. The capacity cases aim keys at a partition, so every
//     count is exact, and check each partition's headroom in Stats.
//   - Require: the optional capabilities the store must show. A wrapper
//     that hides one (a metrics decorator without AdmitCheck) fails the
//     run instead of quietly skipping the cases written for it.
//   - OpenReplica: a store over a shared backend opens a second store
//     value over the same data, as another replica of the service would
//     (its own pool, caches and clock floor; the same rows). See Replicas
//     below.
//
// A first subtest, harness, builds one store to check the Instance and
// learn the store's capabilities; Run logs what it found, and at the end
// how often it called each capability, failing if it never called one the
// store offers, and which cases skipped as not applicable to the store,
// grouped by the reason each gave. go test prints a passing test's log
// only with -v: run the suite once with -v to read that summary.
//
// # Replicas
//
// Several replicas of a service share one backend, and each opens its own
// store value over it. What a store keeps per value is right as long as
// it is the only writer, and wrong as soon as there are two: a capacity
// count of its own lets each replica fill a partition to the bound; a
// lock in its own process (a mutex per key, a lock manager per pool) lets
// two replicas both "hold" one key and lose an update; a cache of the
// counts it wrote hides the other replica's units; a floor under the clock
// kept per value lets a replica whose clock is behind lengthen a retry
// time; cleanup bookkeeping of its own leaves the other replica's expired
// counters in place. With [Instance.OpenReplica] set, the cases of the
// replicas scenario open a second store over the case's data and check
// that the two share their counts exactly (interleaved checks and
// batches), the capacity bound, their locks (overlapping checks on both
// lose no update), cleanup, window ends, the clock's floor and Stats. The
// replica must read the same clock as Store: the same [ManualClock], or
// the same server's. A store whose data lives in its own process leaves
// OpenReplica nil; the replica cases are then skipped, and Run's summary
// says that nothing checked two replicas over one backend.
//
// # A store with a real backend
//
// A store over a server gets an empty namespace of its own in each case and
// removes it when the case ends. t.Context is cancelled before cleanups
// run, so teardown takes a context of its own:
//
//	func TestConformance(t *testing.T) {
//		t.Parallel()
//		db := openTestServer(t) // one server, or one connection pool, for the whole run
//		conformance.Run(t, func(t testing.TB, opts conformance.Options) conformance.Instance {
//			schema := fmt.Sprintf("conformance_%x", rand.Uint64())
//			require.NoError(t, sqlstore.Migrate(t.Context(), db, schema))
//			t.Cleanup(func() {
//				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
//				defer cancel()
//				_, err := db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE")
//				require.NoError(t, err)
//			})
//			store, err := sqlstore.New(db, sqlstore.Config{
//				Schema: schema, RowsPerPartition: opts.Capacity, MaxBatchSize: opts.MaxBatchSize,
//			})
//			require.NoError(t, err)
//			return conformance.Instance{
//				Store: store,
//				// Time passes by moving every stored window back by d.
//				Advance: func(t testing.TB, d time.Duration) {
//					_, err := db.ExecContext(context.Background(), "UPDATE "+schema+".windows"+
//						" SET started_at = started_at - $1::interval, expires_at = expires_at - $1::interval", d.String())
//					require.NoError(t, err)
//				},
//				PartitionOf: sqlstore.PartitionOf,
//				Require:     []conformance.Capability{conformance.CheckAdmitter, conformance.Cleaner},
//			}
//		})
//	}
//
// Creating a namespace per case costs most of such a suite's time; the
// PostgreSQL adapter's own test lends each case one of a few migrated
// databases and empties it after the case instead.
//
// A key-value server works the same way: give each case a key prefix of
// its own (random, so that runs sharing the server never meet), delete
// the prefix's keys in the cleanup (never the whole server's), and shift
// the stored window times in Advance with one atomic server-side step
// over the prefix's keys (a Redis script). The Redis store in this
// repository's benchmarks module (benchmarks/redisstore) is a worked
// example, harness included. Four things such a harness must get right
// that the example above does not show:
//
//   - A native expiry the store sets besides its window times (a Redis
//     PEXPIREAT, a DynamoDB TTL attribute) runs on the server's own clock,
//     which Advance does not move. Advance must move it by d as well, and
//     delete what the server would have deleted by then; otherwise every
//     key outlives the case, and a time to live set only when a key is
//     created, or rounded to whole seconds, passes unseen. So must it
//     move every other copy of a window's end the store keeps, such as an
//     index of counters by expiry that cleanup and capacity retry times
//     read (a sorted set): left behind, it fails dozens of cleanup, expiry
//     and retry cases that then seem to blame the store.
//   - A store whose clock is the server's, read inside the same atomic step
//     as its keys (Redis TIME in the script), cannot hand the suite a
//     [ManualClock]: leave Clock nil and ExactTime false. The cases that
//     need a clock the suite steps back or moves exactly then skip, and
//     Run's summary lists them by reason: the clamp, windows of a
//     millisecond, a window's last microsecond. Review those by hand, and
//     where the store reads its clock (after every key it judges, never
//     before).
//     Its precision is checked between consecutive checks of one key
//     (time's running_clock case), which a clock cut to whole
//     milliseconds fails only when two checks take less than one: over
//     a slower network, review it too.
//   - A script language's numbers may not be Go's: Lua's are float64, exact
//     only to 2^53, and print a Unix time in microseconds as 1.7e+15. Keep
//     counts and times as decimal strings on the server and do the
//     arithmetic in Go, through the domain; a sorted-set score is a
//     float64 too, and orders windows ending past 2^53 µs only roughly.
//     The same holds for the harness: an Advance script that subtracts d
//     from a time in Lua moves the windows of the largest length, which
//     end past 2^53 µs on a Unix epoch, by d give or take a microsecond
//     or two. Read the prefix's keys, compute the moved times in Go, and
//     write them with a script that applies only if no key changed since
//     the read (retrying otherwise), as benchmarks/redisstore's harness
//     does.
//   - Every case waits on the network for each operation, so the run is
//     bound by round trips, not by the CPU, and go test runs only
//     GOMAXPROCS parallel cases at once. Raise -parallel: against a Redis
//     server 10 ms away, benchmarks/redisstore's run took 49 s with the
//     default of two and 14 s with -parallel 16. The longest case, churn,
//     makes its operations one after another: about 11 s at 10 ms.
//
// Such a store races freely (see Concurrency): run it with -count and
// -race.
//
// # What it checks
//
// Every case is a subtest named scenario/guarantee, one file per scenario:
//
//   - windows: anchored half-open windows, exact remaining units and reset
//     times, renewal at exactly the end and anchored at the renewing check,
//     windows of a millisecond, one counter per policy fingerprint and
//     subject, costs, counts beyond 2^31, 2^32 and 2^53, the largest limit
//     and window;
//   - denials: a quota, storage-capacity or shadow denial consumes
//     nothing, and a quota denial lasts only until its window ends (not
//     until its retry time rounded to whole seconds);
//   - batches: all-or-nothing, the first failure in caller order,
//     allowances in caller order, structural errors that never reach the
//     store, repeated batches counted each time, each check of a batch
//     counting its own cost (on a new key, an active window and an ended
//     one), and a nil, unprepared or
//     already evaluated batch handed to Admit directly refused without a
//     panic, with Batch.Ready's error even beside a nil context;
//   - paths: AdmitCheck and Admit share counters, rules and the capacity
//     bound, and AdmitCheck rejects an invalid check;
//   - capacity: per partition, exactly: a full partition refuses new keys
//     (with a retry time, when it gives one, that is its own earliest
//     expiry, renewals included, in a batch too, also when the counter
//     that ends first is one the refused batch names), at a capacity that is no
//     power of two as well, never evicts, serves its keys and renews
//     expired ones in place, alone or in a batch beside a new key (whose
//     free slot the renewal leaves to it, also when no other counter has
//     ended that a store cleaning on each check could remove on the way);
//     expired counters hold their slots until removed, and once removed
//     their slots are all usable, however many of their neighbours were
//     renewed; a batch's new keys compete for free slots, each for one of
//     its own partition's; a denied batch
//     keeps none;
//   - cleanup, stats, close: the optional [ports.Cleaner],
//     [ports.StatsReporter] and [ports.Closer], skipped when absent;
//     one cleanup call removes every expired counter it may, up to its
//     maximum (a maintenance loop drains a store until a call removes
//     fewer than it asked for);
//     Stats counts its entries as the slots it holds, expired counters
//     included, also after a check removed only some of them;
//     cleanup answers a negative or zero maximum, a nil or done context
//     and a closed store in the order ports.Cleaner documents; a closed
//     store answers every call with an error matching [ports.ErrClosed]
//     that says nothing was consumed and holds no key, Admit, AdmitCheck
//     and CleanupExpired even when their context is done as well (as
//     ports.Closer documents), and still reports a nil context, a nil
//     batch or an invalid single check as the caller's mistake, but
//     never a valid call on a closed store (its error does not match
//     [domain.ErrInvalidInput]); Close racing an admission lets it
//     finish, allowed or refused as closed, without a panic; and a Stats
//     report is the caller's snapshot, which later calls never change
//     and writing into which changes nothing the store reports;
//   - context: Admit, AdmitCheck and CleanupExpired, called directly with
//     a nil context, return an error matching [domain.ErrInvalidInput]
//     ([ports.ErrNilContext]), consume nothing and never panic (nor does
//     Stats); a context done before the call admits nothing, with an error
//     matching the context's that says nothing was consumed (ctx.Err(),
//     also when the context ended with a cause); and a context
//     cancelled while an admission runs never leaves an error saying
//     nothing was consumed beside a unit that was, and leaves a batch
//     whole, counted for every key or none, with no slot kept for a key
//     it did not store;
//   - shadow: shadow policies count, report and never consume on denial,
//     capacity denials are never shadowed, and switching modes keeps the
//     count;
//   - concurrency: racing checks on one key, on each path, across the
//     two and in shadow mode, lose no update, nor do checks racing to
//     create new keys; checks of different keys in the store at once each
//     decide on their own key's state; a batch samples its clock with
//     every one of its locks held; new keys racing for the last slots
//     take exactly those; batches naming the same keys in opposite
//     orders, or keys whose order crosses their partitions' order, neither
//     deadlock nor miscount; a large batch never waits on a lock it holds
//     (two keys on one stripe of a striped lock); cleanup racing
//     admissions of its partition, on each path, neither deadlocks nor
//     removes a renewed counter, nor frees the slot of a counter it did
//     not remove; an optimistic admission held while
//     cleanup removes its counter and another check creates it anew
//     still finds it changed (a version that restarts on insert does
//     not); a batch denied at a later check shows a racing check of an
//     earlier key none of its units;
//   - lookalikes: counter keys built to agree in part (the 64-bit
//     Hash64, a prefix or suffix of the subject key, an XOR fold, the
//     fingerprint XOR the subject key, the fingerprint's first byte) each
//     count in a counter and take a slot of their own, and so do subject
//     keys that differ only in a byte a text key drops or folds: a control
//     byte, a space and a tab, a letter's case in base64;
//   - time: the store's clock never moves a window backwards, and on a
//     clock that keeps running a window's time left falls from one check
//     to the next by no more than the real time between them; and a time
//     with fewer than six digits of microseconds past its whole second is
//     read as it is (a Redis TIME reply joined as text reads it far too
//     small);
//   - anchoring: a batch is decided and stored at one clock sample: held
//     after its sample while time moves past the end of one of its
//     windows, a batch that still counted in that window anchors its new
//     key's window no later (a store that stamps new windows with a second
//     clock read for the write does not), and a batch that answers that
//     it renewed that window stored the renewal (a store that writes at
//     its sample but judges its answer at a later clock read does not);
//     and a batch that counts in active windows leaves their ends where
//     they were anchored (a batch script that calls PEXPIRE on every key
//     it counts slides them);
//   - expiry: a counter removed by cleanup is gone for every later read,
//     also when its last check only read it (a denial); an expired key of
//     a batch renews in its own slot, which the batch's new key cannot
//     take; a counter a check has just found active is neither cleaned up
//     nor evicted at that instant, when it ends between two whole
//     milliseconds too; and a clock that steps back moves no window back
//     (when the harness hands over Instance.Clock, which the suite then
//     steps back);
//   - readiness: the optional [ports.ReadinessChecker], skipped when
//     absent: Ready consumes no quota and takes no slot, and fails with
//     an error matching [ports.ErrClosed] once the store is closed;
//   - lifetime: a counter lives exactly as long as its own window,
//     however the store keeps a key's time to live apart from it: a
//     window renewed in place lasts its whole new window whatever time
//     to live, rounded to whole seconds, the key had before; a counter
//     stays active to the last microsecond of its window (on a clock that
//     has shown it keeps microseconds, also when the window ends between
//     two milliseconds); each key of a batch lives by its own policy's
//     window;
//   - clamp: on a clock that steps back (Instance.Clock), a denial raises
//     the clamp as an allowed check does, every read after the step is
//     clamped, a batch is clamped by every partition it touches, single
//     checks and batches share one clamp, and a cleanup leaves it where
//     it was and reads it too, removing a counter the store has seen end;
//   - retry: a capacity denial's retry time, when it gives one, is the
//     partition's earliest expiry to the microsecond, also when that
//     counter is another policy's, with another window, and was checked
//     again since its window began, and zero once every counter of the
//     full partition has ended, or only its earliest one has;
//   - spread: a batch with more new keys than one partition holds, spread
//     over partitions that each hold their share, is admitted whole;
//   - churn: one partition cycled through about forty rounds of create,
//     expire and cleanup in calls of one keeps every counter it stores,
//     finds each again after its neighbours are removed, counts its slots
//     exactly and names its earliest end as a capacity retry time,
//     also after cleanup removed the earliest counters of ones created
//     out of order;
//   - fingerprints: for one subject, a policy whose limit is 2^32 above
//     another's, or one above its 2^53, whose window is 2^32 ms longer,
//     whose policy id and scope join to the other's text around a
//     separator they may hold, or whose fingerprint shares its first or
//     last four bytes with the other's, counts in a counter of its own;
//     a batch's new counters of one subject under two policies take a
//     slot each; and cleanup removes a subject's expired counter but not
//     its active counters under other policies (a store that keys
//     counters by eight or more bytes of the fingerprint meets no pair
//     the suite can find: review what it keeps);
//   - results: an error carries no result: AdmitCheck returns the zero
//     Decision beside every error (a nil or done context, an invalid
//     check, a cancellation while it runs, a closed store), and a closed
//     store's Stats the zero Stats; an invalid single check is reported
//     as the check's own *domain.CheckError before a nil or done context,
//     and a batch that is not ready by Batch.Ready's error before a done
//     one; and an open store never answers a nil or done context, before
//     or during an admission, with an error matching [ports.ErrClosed];
//   - lifecycle: around failed calls a store reports what is true: Stats
//     returns the zero Stats beside every error, after a report was read
//     and Close (with a live or a done context, answered as closed, or
//     a nil one, answered as the caller's mistake) as
//     well as for a done context; checks, batches and cleanups refused
//     for a done context leave Stats' entries and headroom as they were;
//     a cleanup whose context is cancelled while it runs returns the
//     count it removed, beside its error or not; and Ready answers a nil
//     context as the caller's mistake, a done one with its error, a done
//     one after Close as closed, and is ready again after calls refused
//     for a caller's done context;
//   - extremes: a clock that steps back by a microsecond, within the
//     latest millisecond, is clamped as a larger step is; windows of the
//     largest length, anchored on consecutive microseconds, stay active to
//     their last microsecond and end exactly then, and a partition full of
//     them names its earliest end, exactly, as a capacity retry time (such
//     ends lie past 2^53 µs on a store that counts from the Unix epoch);
//   - waits: an admission or a cleanup that waited for a lock decides on
//     what it finds after the wait: a batch waiting for a stored key's
//     lock counts its new key's free slot anew, so a new key admitted
//     meanwhile into the partition's last slot leaves it full, not over
//     its bound; and a cleanup that collected a counter from a lower
//     partition and waited for a higher one's lock neither removes that
//     counter, renewed meanwhile, nor frees its slot; and a batch that
//     waited (for a stored key's lock, or for a cleanup pinned in its
//     clock read) while cleanup removed one of its keys claims a slot for
//     that key, so the batch and a rival new key never both get the last
//     slot; and a renewal that a cleanup pinned in its clock read lets in
//     before it removes the ended counter is kept;
//   - extents: CleanupExpired with a maximum beyond 32 bits (math.MaxInt,
//     2^31, 2^32, 2^32+1) removes every expired counter, and a partition
//     of twelve names its earliest end as a capacity retry time whichever
//     counter, newest or oldest of them, ends first; a call asked for
//     more than 25 (one DynamoDB batch write) removes 37 expired counters
//     at once; and a batch of 32 refused at its last check leaves its
//     other 31 keys untouched (no chunk of 25 committed ahead), and the
//     same 31 allowed as a batch are all counted (no item past the 25th
//     dropped);
//   - tiers: one subject under two tiers of a policy (one policy id and
//     scope, so one subject key, another window) is two counters, and
//     two batches naming both tiers in opposite orders, each holding its
//     first lock, do not deadlock: a store that orders its locks by
//     subject key alone takes them in the caller's order;
//   - sampling: a check that counts after another, whose whole admission
//     ran while the first was pinned just after its clock sample, read
//     the clock again before it decided, so a store that samples (and
//     clamps) its time before its locks, as a transaction's start time,
//     is caught even when its clamp hides the stale sample's value; and
//     a check of an exhausted key pinned after its sample, half a window
//     before the window ends, while time moves to that end and a cleanup
//     runs, leaves the key a window that began no earlier than the
//     cleanup: a store that samples its clock under a store-wide mutex
//     before its locks, and whose cleanup takes a partition's lock before
//     reading the clock through that mutex, lets the cleanup remove the
//     counter first, and the check then anchors a new window at its
//     earlier sample, in the window it should have been denied in; and of
//     two checks of a key half a minute before its window ends, the first
//     pinned after its sample while the second runs or waits and time then
//     moves past the end, one counts in the old window and the other
//     renews, each answering at the sample it counted at (an optimistic
//     store that answers from its first attempt's sample after a later
//     attempt stood reports the old window full, beside the renewal it
//     wrote);
//   - lockwaits: a check, or a batch, whose context is cancelled while it
//     waits for a lock an admission pinned in its clock read holds
//     answers the decision it made, or an error matching the context's
//     error that is true of what it consumed (no unit counted later by an
//     admission left running), lets go of every lock it took or waited
//     for (a check of the same key let in while the holder decides would
//     lose an update; one of a key it took first would wait for ever),
//     and the counts of every key come out exact;
//   - clampraces: a check pinned just after its clock sample while time
//     moves on and a check of a key in another partition runs never
//     lowers the store's clamp: after the clock steps back, a new key of
//     the other partition is anchored at the latest time that partition
//     read (Instance.Clock);
//   - keyorder: a batch whose caller order is a cycle of its three keys'
//     byte order writes each key its own count (a store that maps its
//     sorted keys back through the inverse permutation is right for every
//     pair and every sorted batch, and swaps counts around the cycle);
//   - lastmicro: a counter in the last microsecond of its window, anchored
//     on a whole millisecond, is neither removed by cleanup nor evicted
//     from its full partition for a new key (a bound one microsecond off);
//   - cleanupclamp: a cleanup raises the clamp to the time it judged
//     counters ended at, so after the clock steps back a key it removed is
//     anchored no earlier (Instance.Clock);
//   - lockcycles: staged behind two checks pinned after their clock
//     samples and released in turn, batches of three keys in two rotations
//     of one order, and Stats racing a batch across three partitions,
//     neither deadlock nor miscount (a store that sorts only a pair of
//     keys, or whose Stats locks partitions downwards, deadlocks every
//     run, and fails in about a second);
//   - sweep: a store that frees the slots of ended counters during
//     admission frees them for every check of a batch, on that check's
//     own partition, and takes a window ending exactly now as ended, so
//     a batch of new keys on partitions of ended counters is admitted, or
//     refused at its first check by a store that frees no slot on the
//     way, never refused part-way;
//   - errors: in every case, no error the store returns shows a subject
//     key the case made, whole or any 6 bytes of it in a row, in its
//     message or in the exported fields of any error in its chain (as raw
//     bytes, bare, in a Go-quoted string or in PostgreSQL's bytea escape
//     format; hex, contiguous or split by
//     spaces, colons or dashes; base64; base32; a byte array that fmt or
//     encoding/json prints; 8 of its bytes read as a 64-bit integer;
//     its bytes in reverse order in hex, as a little-endian word prints;
//     one decimal integer of 6 or more of its bytes, as math/big prints
//     the whole key; or consecutive 32-bit words of it in decimal),
//     and none is a typed nil (a nil *T returned as an error, which is
//     not a nil error). The suite never prints such an error itself: its
//     messages and operation log show it withheld, naming the key and how
//     it shows;
//   - calls return: a call into the store that panics fails its case
//     with the panic's value (withheld too when it shows a key) instead
//     of crashing the test binary, and one that has not returned after 30
//     seconds fails its case, leaving its goroutine blocked in the store;
//     every case not yet started then fails at once rather than wait as
//     long, so a store that ignores its context fails the run in about
//     30 seconds instead of hanging it until go test's -timeout.
//
// Cases that make single checks run twice, as subtests named AdmitCheck
// (through [ports.CheckAdmitter], the path limiters take for every single
// check) and batch_of_one (through Admit, the path they take without it).
// The suite drives batches through the engine of
// [github.com/runlimit/runlimit/app.Limiter], the path hosts use, without
// importing package app, which wires in Runlimit's own stores, pgx and fx.
//
// # When a case fails
//
// The failure names the guarantee that broke and says how, then lists the
// operations the case applied to its fresh store, with policies and keys
// named P1, k1 (never their bytes) and the time each ran at:
//
//	capacity: a denied batch keeps no slot for its new keys (two new keys for the one
//	free slot): the denied check, in caller order; got denied at check 0 of 2: denied
//	(storage-capacity, retry after 1h0m0s)
//	operations on this case's fresh store (single checks via AdmitCheck, Options {Capacity:4 MaxBatchSize:8}):
//	     P1 = policy conformance.check/subject, limit 1, window 1h0m0s
//	  1. t+0s         check P1/k1@p1 via AdmitCheck → allowed (limit 1, remaining 0, reset after 1h0m0s)
//	  2. t+0s         check P1/k2@p1 via AdmitCheck → allowed (limit 1, remaining 0, reset after 1h0m0s)
//	  3. t+0s         check P1/k3@p1 via AdmitCheck → allowed (limit 1, remaining 0, reset after 1h0m0s)
//	  4. t+0s         batch [P1/k4@p1, P1/k1@p1] via Admit → denied at check 1 of 2: denied (quota, retry after 1h0m0s)
//	  5. t+0s         batch [P1/k4@p1, P1/k5@p1] via Admit → denied at check 0 of 2: denied (storage-capacity, retry after 1h0m0s)
//
// (Here the batch of step 4, denied, kept the slot its new key k4 claimed,
// so k4 was refused at step 5 although one slot of the four is free.)
// Every case starts from an empty store and applies a handful of
// operations, so the list is the sequence to reproduce the bug with.
//
// # Concurrency
//
// A store that reads a [ManualClock] has its races scheduled: the store
// reads its clock while it holds every lock of an admission, so the suite
// holds each clock read until the other racing admissions are parked on
// the store's locks (read from their goroutine states) or inside the clock
// themselves. A store that reads, unlocks and then decides or writes lets
// a second admission read the same state, and loses an update; two
// single-key admissions held this way make two opposite-order batches each
// take their first lock before either takes its second, which deadlocks a
// store that locks in caller order. Waiters parked past a millisecond also
// put a [sync.Mutex] into its starvation mode, where an unlocking
// goroutine hands the lock to the first waiter: a store that releases its
// lock between deciding and writing is then overtaken every time. One case
// pins an admission just after its clock sample instead, moves time on and
// runs a second admission of the same key: a store that samples its clock
// before it holds its locks lets the second count first, and the first then
// counts at a time that had passed, reporting more time left than the
// check before it. So these bugs fail one default run, every run. A deadlock fails its case once
// every racer has waited inside the store for a second with none holding
// its clock, each parked on a lock or a channel: a racer asleep or waiting
// on the network (a store making a round trip while it holds its locks,
// however long it takes) is slow, not deadlocked. A race that makes no
// progress at all fails after 30 seconds.
//
// The suite holds admissions only inside the clock read, so it sees the
// order of a store's clock read and its locks only where no other lock of
// the store surrounds that read. A store that reads its clock under a
// store-wide mutex of its own (one that clamps the clock, say) and only
// then takes its key locks keeps the pinned admission's rival waiting on
// that mutex, not on a key lock, and passes the pinned case. The sampling
// case whose rival is a cleanup catches it when the cleanup takes its
// lock before it reads the clock through the mutex (as the protocol asks
// of a cleanup): the cleanup then holds the lock the released admission
// needs, and runs first. A store whose cleanup, too, reads the clock
// before its locks runs whichever of the two reaches the lock first, as
// the scheduler decides: review where the clock is read. A gap of the
// same kind lets a cleanup that collects a partition's expired keys under
// its lock and deletes them after taking the same lock again, without
// looking again (or looking again, but freeing the slot whatever it
// finds), pass in most runs, and a store with a single partition that
// counts its free slots in a read of its own before it takes its lock
// admits two new keys into the last slot only when both counted before
// either took it. (Across partitions the waits cases force both: a store
// that counts or collects partitions in ascending order, each under its
// lock, and acts only once it holds them all, is made to wait for a higher
// partition's lock after it has read a lower one.) An optimistic cleanup
// has the same gap: one whose conditional delete compares the occupancy
// alone, not the version of each counter it removes, deletes a counter
// renewed in place (which leaves the occupancy as it was) only when the
// renewal commits between the cleanup's read and its write, and no clock
// read lies in between for the suite to hold: review what a conditional
// delete compares.
// Nor can the suite aim keys at the stripes of a lock a store keeps apart
// from its capacity partitions: a store that takes such stripes in its
// keys' byte order rather than the stripes' own order deadlocks only when
// two racing batches' keys happen to cross on two stripes. Review these
// orders by hand. The pinned case is blind in the same way to a
// store that samples its clock before its locks but clamps the sample to
// the latest time read only after the clock returns (an atomic maximum
// kept outside the locks): the rival's later time is in the clamp by
// then, and lifts the pinned sample. Such a store counts at a passed time
// only when the scheduler pauses it between the clamp and the lock, which
// the suite cannot force: review where the clock is read. (An optimistic
// store that samples its clock once before its retry loop, instead of once
// per attempt, is caught: the sampling cases count the clock reads of a
// pinned check that counted after its rival, and give its retry a clock
// that has moved since its first sample.) A
// goroutine a racing admission starts (a store that runs an admission on
// a worker, or answers its caller when the context ends while the work
// goes on) is held in its clock read as the admission itself would be.
// The suite cannot hold an admission after its clock read: a store that
// keeps a buffer, a decision or a batch outside its locks and fills and
// reads it only after the clock read (a scratch slice shared by every
// call, a decision read back after the unlock, a pooled batch put back
// before its decision is read), or that stores its latest time after it
// unlocks, is wrong only when the scheduler interleaves two admissions
// there: review what an admission shares outside its locks, and run with
// -race. (One that fills such a buffer before its clock read is caught:
// a case holds a check of an exhausted key and a check of a new key in
// their clock reads, each having read its counter, and requires each to
// be decided on its own.) Likewise a store that adds a check's cost first and, when the
// check is denied, takes it back in a step of its own after it let its
// lock go (a Redis rate limiter's INCRBY, then DECRBY when over the
// limit, two commands apart): a racing check of the key is denied for
// units nothing consumed only when it takes the lock between the two
// steps, which the scheduler decides and seldom does (the unlocking
// goroutine usually takes the lock again before the waiter it woke
// runs), and -race sees no unsynchronised access in it. Review
// also where a store creates a key: the creation race lets a waiter in before a creator that dropped its lock
// only when that lock hands itself to the first waiter, as a lock shared
// by a partition's keys does once the race has queued on it, and a mutex
// made fresh for each new key does not.
//
// Stores whose clock the suite does not control race freely: the suite
// has no point inside their admissions at which to hold one, so the
// scheduled cases only check the outcome of whatever interleaving
// happens. A lock released between deciding and writing is then caught
// only in some runs, and a clock sampled before the locks (PostgreSQL's
// now() or CURRENT_TIMESTAMP, the transaction's start, instead of
// clock_timestamp() after the locks) not at all: the pinned admission runs
// to its end before the second starts. For such a store, run the suite
// with -count and -race, and review where it samples its clock. A store
// that can read a ManualClock in tests (or whose test clock calls one, as
// a running clock over a ManualClock does) gets the scheduled races. Optimistic
// stores are as welcome as locking ones: several admissions may then sit
// in the clock read at once, and the suite judges only the outcome, so a
// store that writes only if nothing changed since its read, and starts
// again otherwise, passes (see examples/casstore, which also documents how
// such a store keeps the protocol: read and observe, evaluate at the
// store's clock, write only if nothing changed, start again on conflict).
//
// # Running it repeatedly
//
// Run the suite under the race detector, and more than once:
//
//	go test -race -count=20 -run TestConformance ./mystore
//
// The scheduled races make the bugs above certain on every run, but the
// suite can hold an admission only where it reads the clock. A store whose
// clock the suite does not control, or one that reads its clock first and
// then reads and writes a counter with nothing held, races freely, and a
// free race finds a bug only when the scheduler happens to interleave it.
// -race reports the unsynchronised memory accesses behind many such bugs,
// and -count repeats the races, each with fresh random keys, partitions and
// goroutine schedules. The suite never sleeps for expiry,
// so a run takes seconds: the memory store's, about half a second; a
// store over a server, its round trips (raise -parallel, see above).
//
// # Proof that it can fail
//
// The package's own tests run the suite against over two hundred deliberately
// broken stores, each a plausible real-world bug: window ends off by a
// millisecond or a microsecond, sliding or mis-anchored renewals, times
// and counts kept in milliseconds, seconds, Unix nanoseconds, float64,
// int32 or JSON,
// counters keyed without the limit, caches that outlive writes, locks
// taken in caller order, in key order across partitions, twice on one
// stripe, skipped for shadow checks, or released between reading,
// deciding and writing, a clock sampled before the locks, capacity
// counted wrongly or unguarded, capacity retry times from the wrong
// partition or a stale window, a renewal that leaks a slot, partial
// writes, cleanup and stats that lie, deadlock or answer a done or nil
// context out of order, a careless or panicking Close, a panic on a nil
// context or a nil batch, a done context admitted or a late cancellation reported
// as unconsumed, a single-check path that skips rules, an optimistic
// write conditioned on a version that restarts when a counter is created
// anew, errors that show a key in base32, quoted, spaced hex, as a
// short id or as a lock id, a typed nil error, a read cache that
// cleanup leaves behind, a reclaim that takes the slot of a key its own
// batch renews, expiry swept by the whole millisecond, an unclamped clock,
// a batch that writes part of itself or keeps its slots when cancelled, a nil context answered
// before the batch, a readiness probe that admits a key or answers after
// Close, one read buffer shared by every single check, a clock sampled
// after the first of a batch's locks, a new key written after retaking
// the lock, a key's time to live set only on creation, read or set in
// whole milliseconds, or taken from a batch's first check, a capacity
// retry time from refreshed time to live, in whole seconds or from the
// refused policy alone, a clock clamp raised only on commit, kept raw,
// kept per partition but applied by the first key's, or kept apart for
// single checks, a batch refused for holding more keys than one
// partition, a key printed in bytea escape format, a cleanup that
// frees the slot of a counter it did not remove, a capacity retry time
// from the refused check's window or kept in a buffer from the last
// denial, a capacity rounded up to a power of two, Stats reports that
// share memory with the store, a Close that drops the counters under an
// admission, a closed store's error that claims to be the caller's
// mistake, a context's cause reported instead of its error, a
// cleanup that lowers the clamp or leaves it below the time it judged,
// writes mapped back through the inverse of a sort permutation, cleanup
// or eviction one microsecond early, locks sorted only for a pair of
// keys, a Stats call that locks partitions downwards, a batch that slides
// the active windows it counts, a clock read under a store-wide mutex
// before the locks, and counters keyed,
// or new keys told
// apart, by a 64-bit hash, a suffix, an XOR fold, the fingerprint XOR the
// subject key or the fingerprint's first byte, an index whose tombstones fill its table,
// a probe that stops at a deleted cell, a slot freed twice or handed out
// again by an allocator restarted on an empty partition, an expiry
// heap filtered in place, counters keyed by a limit or a window cut to
// 32 bits, by a limit read back from a float64, by identifiers joined
// with no separator or with one they may hold, or by four bytes of the
// fingerprint, a batch's new keys claiming slots by subject or per
// policy, a cleanup that deletes a subject's other counters, a decision
// handed out beside an error (the last one returned, or one whose write
// a late cancellation dropped), a report beside a closed store's error,
// an invalid single check reported untyped or as its nil or done
// context, an unready batch reported as its done context, a done context
// reported as a closed store, keys printed as a little-endian word
// in hex, one big decimal or two 32-bit words, a clamp that lets a step
// back of a few milliseconds through as jitter or compares whole
// milliseconds, a capacity retry time capped at a day or kept as float64
// Unix microseconds, window times or a key's deadline kept as float64
// Unix microseconds or seconds, free slots counted before the key locks,
// a cleanup that collects every partition before it removes, without
// looking again or freeing the slot whatever it finds, a capacity retry
// time from active counters only, a batch renewal that claims a free slot
// on a store cleaning on each check, Stats entries counted as of the
// latest admission, a cleanup maximum narrowed to 32 bits, a capacity
// retry time from a sample of the newest counters, a cleanup that reads
// the clock past its clamp, new keys judged before the wait for the
// key or partition locks, a cleanup that removes what it collected in
// chunks, yielding its lock between them, without looking again, keys
// made text that drops control bytes or folds base64's case, a clock
// joined from its seconds and microseconds as text, a cleanup that steps
// over a counter after each it removes, and a batch run as single-key
// steps taken back when one is denied, a clamp raised by a load and a
// store that a racing admission comes between, and a lock wait cancelled
// but answered as unconsumed while the admission goes on, or that keeps
// the locks it took, drops the lock of the key it waited for, answers no
// decision, or an error that does not match its context's, an answer
// judged at a later clock read than the one the admission wrote at, or at
// an optimistic store's first attempt's sample after a later one stood,
// a capacity retry time that skips the counters the refused batch names,
// window lengths kept as float seconds and truncated, window times read
// back from float seconds a microsecond short, window ends rounded up to a
// millisecond, capacity retry times cut down to one, optimistic retries
// that count free slots as of their read or decide on their first
// attempt's, conditional writes that compare a counter's window but not
// its count, Stats, cleanup and batches behind a write-behind cache, a
// capacity count kept for the whole process, keys cut at a zero byte or
// to 50 bytes, with their letters' case folded or made valid UTF-8 as a
// JSON string is, Stats cached for a
// clock instant or with the free slots spread over the partitions, a
// write rolled back for a late cancellation but answered as allowed, a
// cleanup that counts the counters it skipped or stops at the first one
// an admission holds, single checks stored in whole milliseconds, and
// windows anchored at the time of the previous round trip. Each must
// fail, in one default run, the case written for it.
package conformance
