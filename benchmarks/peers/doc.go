// Package peers puts Runlimit's memory store and the Go rate limiters a user
// would pick instead behind one keyed "allow one event" interface, so that
// the same benchmark loop drives them all in one run.
//
// # Contenders
//
// [Contenders] lists them, each with a short id used in benchmark names and
// CSV files:
//
//   - runlimit-hmac: app.Limiter over a memory.Store, deriving the HMAC
//     subject key of every check from the subject string, as a service does;
//   - runlimit: the same, with every check's key derived once up front;
//   - runlimit-coarse: runlimit on a memory.CoarseClock instead of the
//     default monotonic clock (not a headline row);
//   - xtime: golang.org/x/time/rate, one *rate.Limiter per key in a map
//     behind a sync.Mutex;
//   - golimiter: github.com/sethvargo/go-limiter's memorystore;
//   - ulule: github.com/ulule/limiter/v3 with its memory store;
//   - throttled: github.com/throttled/throttled/v2's GCRA limiter on its
//     memstore.
//
// Every contender is configured so that no check it is given in a benchmark
// can be denied (a huge limit over a long window), and every contender can
// be read back: [Limiter.Counted] returns an exact reading of one key's
// counter, so a benchmark proves that each check it timed was counted, on
// the key it was meant for.
//
// # Store configuration
//
// Runlimit's store has [StoreShards] shards and room for [StoreMaxKeys]
// keys: twice the 1,000,000 keys of the retained-memory scenario, so that no
// shard fills up while they are spread by hash. Storage grows on demand, so
// the bound costs nothing until it is used. 64 shards is what a service on a
// few cores would choose: enough that two cores rarely meet on a lock, few
// enough that a shard's share of the bound stays large.
//
// The benchmarks live in this package's tests; cmd/peerbench runs them and
// writes the medians as CSV. See ../README.md.
package peers
