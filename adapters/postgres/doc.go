// Package postgres is Runlimit's replica-safe store: every replica whose
// [Store] points at the same PostgreSQL database shares one quota per
// counter, hard-bounded in size, with the database's clock as the only time.
//
// # Setting up
//
// Apply the schema once (see [github.com/runlimit/runlimit/migrations]),
// then build a store over a pool you own:
//
//	pool, err := pgxpool.New(ctx, databaseURL)
//	if err != nil {
//		return err
//	}
//	defer pool.Close()
//	if err := migrations.MigratePool(ctx, pool); err != nil {
//		return err
//	}
//	store, err := postgres.New(pool, postgres.Config{})
//	if err != nil {
//		return err
//	}
//	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
//
// The store never closes the pool; [Store.Close] only makes later calls
// fail closed.
//
// # What one admission does
//
// [Store.Admit] applies a batch in one read-committed transaction, in two
// network round trips (statements are pipelined with pgx):
//
//  1. BEGIN; statement, lock and idle-in-transaction timeouts set from what
//     is left of the operation's budget; pg_advisory_xact_lock on every key
//     ([AdvisoryLockID], ascending, de-duplicated); the stored counters read
//     and locked FOR UPDATE in ascending counter-key order; for keys without
//     a row, their capacity-ledger rows locked in ascending shard order;
//     then one pg_catalog.clock_timestamp() sample.
//  2. The domain evaluates the batch at that time. If it is allowed: the
//     updates, the inserts and COMMIT. If not: ROLLBACK.
//
// A single check, the common case, whether it comes through
// [Store.AdmitCheck] (the path app.Limiter.Check takes) or as a batch of
// one, makes the same two round trips with fewer statements: round trip 1
// is BEGIN and one call of the function runlimit_lock_counter (migration
// 003), which takes the settings, the advisory lock, the row lock, the
// ledger lock of a new key and the clock sample in that order, each step a
// statement of its own inside the server; round trip 2 is one UPDATE or
// INSERT and COMMIT. Its statements are prepared once per connection, under
// names starting with runlimit_.
//
// The advisory locks serialise every admission of a key, the ones that
// create it included; a statement that starts after them takes a fresh
// snapshot and sees what the previous holder committed. Because every lock
// is taken in one global order, batches naming the same keys in opposite
// orders never deadlock. The clock is read once every lock is held, so a
// check that waited is judged at the time it got its turn, and durations in
// decisions are measured to that sample: by the time the caller reads them
// they may overstate the time left by the commit and transport latency,
// never understate it.
//
// # Capacity
//
// The counter table is bounded by a capacity ledger of 256 shards. A
// counter's shard is the first byte of its fingerprint XOR the first byte of
// its subject key ([ShardOf]). Statement-level triggers keep each shard's row
// count exact on every insert, delete and truncate, and the database refuses
// a shard's 65,537th row whoever inserts it. The store denies a new key for
// storage capacity when its shard already holds [Config.RowsPerShard] rows
// (default 4,096, so about a million counters), counting the batch's own new
// keys on that shard in caller order. Such a denial carries no retry time:
// finding a shard's earliest expiry would need a scan.
//
// Expired rows keep their slot until [Store.CleanupExpired] deletes them; a
// key whose window expired renews its own row without a new slot. Run
// cleanup continuously, for example from a ticker. It deletes at
// most the rows it is asked to, oldest expiry first through the expiry
// index, with one clock sample, skipping rows an admission holds.
//
// # Timeouts and errors
//
// Waiting for a pooled connection is bounded by [Config.AcquireTimeout];
// the operation then gets a fresh [Config.OperationTimeout] budget. Server
// timeouts fire a little before the client's deadline so that the
// connection usually survives; a client-side deadline, a commit timeout or
// a caller's cancellation closes the connection instead of pooling it.
//
// Errors fail closed. A [*CheckError] says whether the batch may
// nevertheless have been committed: only when the failure struck once COMMIT
// had been sent (a commit error, a commit timeout, a connection lost during
// the second round trip). Ask through
// [github.com/runlimit/runlimit/ports.MayHaveConsumedQuota], and do not
// blindly retry such an operation. A denial decided before a rollback that
// then fails is still a denial, not an error. A [*MaintenanceError] from
// cleanup says whether rows may have been removed. No error text contains
// key bytes.
//
// # Sharing a database
//
// Advisory locks live in one namespace per database, shared by every
// application and role connected to it. An unrelated session that takes the
// same 64-bit lock id, by chance or on purpose, delays the counters mapped
// to it until their operation timeout. Give Runlimit a trusted or dedicated
// database, or make sure untrusted roles cannot call the advisory-lock
// functions.
//
// Every function the store calls is schema-qualified with pg_catalog, and
// the ledger's trigger functions run with a fixed search_path, so a
// search_path that puts a schema ahead of pg_catalog (where someone could
// plant their own clock_timestamp) cannot change the store's time. Tables,
// and the function runlimit_lock_counter, are found through the session's
// search_path: keep Runlimit's schema one that untrusted roles cannot
// create objects in.
//
// # Schema compatibility
//
// The table layout, fingerprints, subject keys, shard function and advisory
// lock ids are byte-compatible with Runlimit for Rust: services in both
// languages sharing one secret and one database count on the same rows and
// wait on the same locks.
package postgres
