// Package postgres is Runlimit's replica-safe store: every replica whose
// [Store] points at the same PostgreSQL database shares one quota per
// counter, hard-bounded in size, with the database's clock as the only time.
//
// # Setting up
//
// Apply the schema once (see [github.com/runlimit/runlimit/migrations]),
// then build a store over a pool you own, naming the same schema:
//
//	pool, err := pgxpool.New(ctx, databaseURL)
//	if err != nil {
//		return err
//	}
//	defer pool.Close()
//	if err := migrations.MigratePool(ctx, pool, "runlimit"); err != nil {
//		return err
//	}
//	store, err := postgres.New(pool, postgres.Config{Schema: "runlimit"})
//	if err != nil {
//		return err
//	}
//	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
//
// The store never closes the pool; [Store.Close] makes later calls fail
// closed and waits for the calls in flight (one still waiting for a
// connection included) and for the work the store runs on goroutines of
// its own (that of callers with a deadline, in flight or left behind at
// it, and the warm-up of idle connections), so that closing the pool
// right after it meets none of it. [Config.Schema] defaults to public, where databases
// migrated before the schema was configurable hold Runlimit's objects.
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
// [Store.AdmitCheck] (the path app.Limiter.Check takes) runs the very same
// flow: the check becomes a batch of one (domain.Batch.ResetSingle), so
// the protocol, its error attribution, the evaluation and the finish are
// written once. A batch of one, the common case, sends the same steps as
// scalar statements, which cost the server less, in the same two round
// trips: round trip 1 is BEGIN, one statement that sets the timeouts and
// takes the advisory lock, and one that takes the row lock, the ledger lock
// of a new key and the clock sample, in that order; round trip 2 is one
// UPDATE or INSERT and COMMIT. (The previous release called the function
// runlimit_lock_counter for round trip 1; its replicas still do, and this
// one prepares the call, without running it, to make sure the schema has
// version 6's objects.)
//
// A connection new to the store is made ready before it serves anyone: one
// pipelined round trip sets its own timeouts, checks the session's settings
// (see Server settings), takes its tables' share locks, prepares every
// statement (under names starting with runlimit_) and runs round trip 1 of
// a single check and of a batch and the read of the optimistic protocol
// once, in a transaction it rolls back, so that the server plans them.
// What a connection has prepared is kept with it (in its PgConn's
// CustomData), not in pgx's statement cache.
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
// # The optimistic protocol for single checks
//
// [Config.Protocol] set to [Optimistic] admits single checks without
// holding a lock across round trips. Batches of two or more checks keep the
// locked protocol above. A single check then runs:
//
//  1. one read, outside any explicit transaction: the stored counter
//     (or, for a key without a row, its shard's ledger count) and one
//     pg_catalog.clock_timestamp() sample, taken after the statement's
//     snapshot. The domain evaluates that. A denial ends here: it writes
//     nothing and needs no confirmation (see below). A statement before
//     it, in the same round trip and implicit transaction, sets its
//     statement and lock timeouts from the caller's deadline: the server
//     takes the read's table locks when it binds it, so a table lock held
//     elsewhere (an ALTER TABLE) ends in a timeout that leaves the
//     connection in use, not in the store's budget running out.
//  2. for an allowed check, one conditional write, its own implicit
//     transaction, committed at the pipeline's Sync; a statement before it
//     sets its timeouts from the caller's deadline, so that they bound
//     every lock it waits for, its table's included. It
//     is an UPDATE that applies only while used, start and expiry are the
//     values read, or, for a new key, a statement that takes the key's
//     advisory lock, then an INSERT, with a snapshot taken once that lock
//     is held, that takes the locked protocol's next locks in its order:
//     the key's counter, if one was created since the read (a conflict,
//     and a counter that cleanup is deleting is waited for before any
//     ledger row), then its shard's ledger row, applying only while the
//     shard has room. The new window starts at the database time once
//     those locks are held, as the locked protocol's does: a counter of
//     the key created and cleaned up since the read leaves no row to
//     conflict with, and a window anchored at the read would start before
//     it.
//
// A write that applied nothing met a concurrent admission, renewal or
// cleanup of the key, and the check starts again; after a second conflict
// it takes the locked protocol, which queues instead of retrying. (Under a
// default_transaction_isolation stricter than read committed, the server
// aborts such a write with a serialization failure instead, and under
// serializable it may abort the read, or the write at its implicit COMMIT,
// before anything is committed: each counts as the same conflict. The
// locked protocol sets read committed itself.) Every
// write applies to exactly the state that was evaluated, so admissions of
// a key still form one chain: nothing is lost or counted twice, and the
// bound is checked on the latest, locked ledger row. A denial stands on
// the read: the snapshot is at least as new as the call, and an admission
// that committed after it sampled its clock earlier than the denial did,
// so it could only have consumed more of the window the denial saw.
//
// Both protocols, on replicas of either mode and on Rust Runlimit services,
// serve one database at once: the optimistic insert takes the same
// advisory lock as every locked admission that finds a key absent.
//
// What it saves: the settings statement and its four settings, and the
// advisory lock of a stored key, which cost the server more than the rest of the
// transaction; a denial costs one round trip instead of two. The timeout
// statements cost a Bind and an Execute each, of a prepared statement
// that reads no table, in a round trip that was sent anyway. In
// benchmarks/cmd/pgload on 2-vCPU machines shared by client and server it
// ran at 0.95 and 1.05 times the locked protocol's rate at 8 and 32
// callers in the run committed in benchmarks/results, and at up to 1.25
// times at 32 callers in earlier runs (benchmarks/README.md). What
// it costs: under contention on one key the conflicting writes are wasted
// work (two conflicts hand the check to the locked protocol); and the lock
// waits move to round trip 2, whose COMMIT is implicit, so a caller whose
// deadline strikes while the write waits for a lock is told that quota may
// have been consumed (a caller without a deadline waits a moment for the
// server's cancellation and learns that nothing was committed).
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
// # Timeouts, deadlines and errors
//
// Waiting for a pooled connection is bounded by [Config.AcquireTimeout]
// and the caller's context; the operation then gets a fresh
// [Config.OperationTimeout] budget of its own. Statement and lock timeouts
// are set on the server from the caller's deadline (or the budget, if that
// ends first), a little before it, so that the server usually ends a slow
// statement itself; the idle-in-transaction timeout, which would end the
// server session, is set from the budget.
//
// A caller's deadline or cancellation never costs the pool its connection.
// The wire work runs under the store's budget, which the caller cannot end,
// in a goroutine of its own when the caller's context has a deadline. Such
// a caller gets its answer at its deadline, a [*AdmissionError] that consumed
// nothing unless COMMIT had been sent; a caller whose context is cancelled
// without a deadline gets it once the server has stopped, a moment later.
// The store lets the round trip finish, asks the server to cancel the
// statement if it is still running a moment later, rolls back under a small
// budget of its own and returns the connection to the pool. It closes a connection only when its state is
// unknown: the connection broke, the server did not answer in time, or a
// cancel request could not be delivered (it might strike a later
// statement). A new connection is prepared and warmed under the store's
// budget too, even when the caller that asked for it has gone, so deadlines
// shorter than a connection takes to get ready cannot keep the pool cold.
// Only its wait for a table that another session holds locked (an ALTER
// TABLE, a migration) ends by the caller's deadline, as an admission's
// would: the warm-up then fails as a timeout before it has prepared
// anything, and the connection stays in the pool, cold, for the next
// caller to warm.
//
// A failure the caller's deadline caused matches context.DeadlineExceeded
// as well as [ErrTimeout], for admissions, [Store.Ready], [Store.Stats] and
// [Store.CleanupExpired] alike: the client's own deadline, or the server's
// statement or lock timeout (SQLSTATE 57014 or 55P03) set from it, which
// strikes a little before it. A server timeout set from the store's budget,
// for a caller whose deadline is later or absent, is the store's: it
// matches [ErrTimeout] only.
//
// Errors fail closed. A [*AdmissionError] says whether the batch may
// nevertheless have been committed: only when the failure struck once COMMIT
// had been sent (a commit error, a commit timeout, a connection lost during
// the second round trip, a caller that gave up during it). Ask through
// [github.com/runlimit/runlimit/ports.MayHaveConsumedQuota], and do not
// blindly retry such an operation; pgconn.SafeToRetry on these errors
// gives the same answer, not the driver's mark on their cause. A denial
// decided before a rollback that then fails is still a denial, not an
// error. A [*MaintenanceError] from cleanup says whether rows may have
// been removed.
//
// Invalid input is rejected before anything else, a closed store or a done
// context included, and matches domain.ErrInvalidInput: a nil batch or one
// never reset, a batch of more checks than [Config.MaxBatchSize] or more new
// keys on one shard than it holds, an invalid check, a negative cleanup
// maximum. A batch already driven is domain.ErrBatchProtocol.
//
// No error, in its text or in any field a printer reaches, holds key bytes
// or a password: every driver error is kept as a [*DatabaseError], which
// has the SQLSTATE, severity, constraint and a masked message, and drops
// the server's detail, hint and context (a unique violation's detail
// spells key bytes in hex) and any connection config.
//
// # Privileges and name resolution
//
// Every table and function the store uses lives in [Config.Schema] and is
// named in full, quoted; every built-in it calls is qualified with
// pg_catalog, and every argument is cast to its type, so that the server
// resolves each name to exactly one object. Every function of Runlimit's
// schema runs with search_path pinned to pg_catalog and pg_temp and names
// every table in full, and the ledger's trigger functions run as their
// owner (SECURITY DEFINER). A role that can create schemas, even one named
// after the service's role, which the default search_path ("$user",
// public) searches first, cannot stand in for any of them. Operators are
// built-ins taking exactly typed values, found in pg_catalog, which every
// session searches first unless its search_path names pg_catalog later:
// the store refuses a session whose search_path does (see Server settings).
//
// The service role needs exactly:
//
//   - CONNECT on the database and USAGE on the schema;
//   - SELECT, INSERT, UPDATE and DELETE on runlimit_fixed_windows (UPDATE
//     also for its row locks, DELETE for cleanup);
//   - SELECT on runlimit_capacity_shards, and UPDATE on its
//     capacity_shard column alone (GRANT UPDATE (capacity_shard) ON ...):
//     locking a row FOR UPDATE needs UPDATE on one of its columns, and a
//     shard number cannot change (its primary key, CHECK and the counters'
//     foreign key hold it). UPDATE on row_count would let the role set a
//     count back and insert past every bound, the database's hard maximum
//     included; the counts are kept by the ledger's triggers, which run as
//     their owner;
//   - EXECUTE on runlimit_lock_counter(bigint, bytea, bytea, smallint, text,
//     text), which a connection prepares a call of when it is made ready
//     (the previous release's replicas run it), and on
//     pg_catalog.pg_advisory_xact_lock(bigint) (PUBLIC has both by
//     default);
//   - SELECT on runlimit_schema_version, for the runlimit status command.
//
// It must not own the schema or any object in it, be a member of their
// owner, or hold CREATE on the schema, TRUNCATE, TRIGGER or REFERENCES on
// the tables: any of these lets it replace a function, drop a trigger or
// empty the counters. Give the migrations a role of their own that owns the
// schema. [Store.Ready] refuses a schema holding a table, view or function
// under one of Runlimit's names (runlimit_*, _sqlx_migrations) that
// belongs neither to the schema's owner nor to a role the service's role
// trusts ([ErrUntrustedSchema]): a role holding CREATE on the schema
// (every role, on public, before PostgreSQL 15) could otherwise plant a
// version table the store reads. It refuses, the same way, a trigger on
// Runlimit's tables whose function such a role owns (it would run with the
// service's rights on every admission), a foreign key into the counters
// from such a role's table (deleting a counter it holds would fail every
// cleanup pass that reaches it), and a trigger that attaches one of
// Runlimit's own trigger functions (PUBLIC may execute them on a schema
// older than version 7) on an event
// Runlimit's triggers do not (the ledger would miscount, and the bound
// per shard fail): the privileges to do any of these, TRIGGER and
// REFERENCES on Runlimit's tables, belong to their owner alone. And it
// refuses a schema whose ledger functions PUBLIC may execute (migration
// step 7 revokes that; a schema vendored without it, or whose privilege
// was granted back, would let any role attach them to a table of its own,
// a temporary one included, and set the ledger's counts).
//
// Advisory locks live in one namespace per database, shared by every
// application and role connected to it. An unrelated session that takes the
// same 64-bit lock id, by chance or on purpose, delays the counters mapped
// to it until their operation timeout. Give Runlimit a trusted or dedicated
// database, or revoke EXECUTE on the advisory-lock functions from PUBLIC and
// grant it to the roles that need it.
//
// # Server settings
//
// Settings given to the service's role or to the database (ALTER ROLE ...
// SET, ALTER DATABASE ... SET), or in a connection's startup parameters
// (the options of a database URL, PGOPTIONS, pgx's RuntimeParams), apply
// to the store's sessions too. The store sets what it depends on for its
// own transactions only, never for the session, since the pool may serve
// the host's own queries too:
//
//   - the isolation level of every explicit transaction (read committed);
//   - statement_timeout and lock_timeout (from the caller's deadline) and
//     idle_in_transaction_session_timeout (from the budget), first thing in
//     every transaction: admissions, the warm-up of a new connection
//     (whose statements, not its lock waits, have the whole budget), Ready,
//     the stats reads and cleanup;
//   - enable_seqscan and plan_cache_mode for the statements of batches.
//
// The one statement of a round trip that sets the timeouts runs under the
// session's own statement_timeout. In the locked protocol (and in the
// optimistic insert of a new key) that statement also waits for the
// advisory locks: a statement_timeout below the callers' deadlines ends
// such a wait early, as a timeout that consumed nothing. Give the service's
// role none, or one above its callers' deadlines.
//
// It checks, once per connection when it makes it ready (and in Ready and
// every cleanup), the settings it cannot set, and refuses a session under
// which it cannot keep its counters exact: the admission, Ready or cleanup
// fails closed with a [*SettingError] ([ErrUnsafeSetting]), consuming and
// removing nothing:
//
//   - session_replication_role other than origin: the ledger's triggers
//     would not fire, so new counters would take no slot and the bound per
//     shard would be gone. Only a superuser may set it, for any role;
//   - a search_path that names another schema before pg_catalog, whether
//     or not that schema exists ("$user" included): its operators and
//     types would stand in for the built-ins the store's statements use,
//     and a schema created later makes the server analyse the statements
//     a connection prepared again, under the new path.
//
// The warm-up of a new connection stops, in the server, before it
// prepares or runs anything under such a session, so that an operator of
// a schema searched before pg_catalog is never called with a stored key.
//
// A connection is checked when it is made ready, which is when the role's,
// the database's and the startup parameters' settings are in force. Host
// code that changes these two on a pooled connection afterwards (a SET
// outside a transaction) is not caught: do not. A pool that serves the
// store alone can pin search_path as a startup parameter, which overrides
// the role's and the database's (pgxpool.Config's
// ConnConfig.RuntimeParams["search_path"] = "pg_catalog, pg_temp"); the
// pool the app wiring opens from a database URL and the runlimit commands
// do.
//
// Whatever else a session says, the store's answers are the same: every
// value travels in binary format (bytea_output, DateStyle, IntervalStyle,
// TimeZone, extra_float_digits, client_encoding and
// standard_conforming_strings change nothing), and the planner's settings
// (the enable_* switches, plan_cache_mode, jit, work_mem,
// force_parallel_mode, default_transaction_deferrable) change only how
// fast it runs. Under a default_transaction_isolation of repeatable read or
// serializable, the optimistic protocol's implicit transactions take that
// level and count its serialization failures as conflicts.
//
// An operator must not set, for the service's role or its database:
//
//   - default_transaction_read_only (or point the store at a standby):
//     every admission and cleanup then fails closed, and Ready says so;
//   - idle_session_timeout below the pool's idle time (pgxpool's
//     MaxConnIdleTime): the server ends idle pooled connections, and the
//     operation that next takes one fails, without consuming, before the
//     pool replaces it;
//   - exit_on_error: every error, a lock timeout included, then costs a
//     connection;
//   - synchronous_commit off, unless losing the last acknowledged
//     admissions to a server crash is acceptable: they would count again;
//   - transaction_timeout (PostgreSQL 17) at or below OperationTimeout: it
//     ends the session of a slow transaction, and one that ends during
//     COMMIT leaves its outcome unknown.
//
// # Connection poolers
//
// Between operations, the store keeps one kind of state in a connection's
// server session: prepared statements. Its own are prepared when it makes
// the connection ready (protocol-level named statements, prepared with
// Parse messages and taken back with Close messages, never SQL PREPARE or
// DEALLOCATE); the maintenance reads use pgx's statement cache, in the
// pool's default query mode. Everything else lives in one transaction:
// advisory locks are transaction locks, settings are set for the
// transaction alone, a locked admission's two round trips are one
// transaction, and each optimistic round trip is one implicit
// transaction. A pooler between the pool and the server, such as PgBouncer,
// serves the store when it keeps each client connection on one server
// session, or carries prepared statements between server sessions itself:
//
//   - Session pooling (PgBouncer pool_mode=session) works. Each of the
//     pool's connections then holds a server connection for as long as it
//     lives, so the pooler's pool for the store's database and role
//     (pool_size) must hold every connection of every replica's pool
//     (pgxpool's MaxConns, summed) besides its other clients: a connection
//     the pooler has no server for waits, its admissions time out without
//     consuming, and the store replaces it once its warm-up's budget ends.
//   - Transaction pooling (pool_mode=transaction) works only with a pooler
//     that tracks protocol-level prepared statements: PgBouncer 1.21 or
//     later with max_prepared_statements above 0 (room for the store's 16
//     statements per schema, and the host's). Without that, each
//     transaction runs on whichever server connection is free, which lacks
//     the statements the client connection prepared, or holds another
//     client's under the same names.
//   - Statement pooling (pool_mode=statement) does not: PgBouncer refuses
//     a transaction of more than one statement and closes the connection.
//
// What does not work fails closed: the operation consumes and removes
// nothing, and its error matches [ErrPooler] and says what to change
// (SQLSTATE 26000, a prepared statement does not exist; 42P05, one already
// exists; PgBouncer's "transaction blocks not allowed in statement pooling
// mode"). A session that lacks only the COMMIT statement fails at COMMIT,
// whose errors never count as rolled back: that error says quota may have
// been consumed. A connection that lost its statements is closed and
// replaced.
// [Store.Ready] cannot tell transaction pooling apart: a quiet pooler
// often gives its checks one server connection, and they pass. Host code
// must not reset a connection the store uses (DISCARD ALL, DEALLOCATE
// ALL): the next admission on it fails the same way.
//
// PgBouncer accepts only the startup parameters it tracks, and refuses a
// connection with another ([ErrPooler] too): the pool the app wiring
// opens from a URL pins search_path as one, so list search_path in
// PgBouncer's ignore_startup_parameters (the store checks each session's
// search_path itself; see Server settings), or lend the wiring a pool.
// Run the migrations and the runlimit command against the server
// directly. A cancel request goes through the pooler, which forwards it to
// the server connection serving the client connection at the time.
//
// Measured through PgBouncer 1.18, in each mode, with more callers than
// server connections (make pooler-probe, adapters/postgres/testdata):
// session pooling admits exactly the limit, single checks and batches, in
// both protocols, and its cancel requests end the statement they mean and
// no other; under transaction pooling a third to most of the operations
// fail as above, under statement pooling nearly all; none over-admits, and
// no pooling mode leaves an advisory lock or an open transaction on a
// server connection. Transaction pooling with
// max_prepared_statements was not measured: what is said of it rests on
// PgBouncer's documentation.
//
// # Schema compatibility
//
// Fingerprints, subject keys, the shard function and advisory lock ids are
// byte-compatible with Runlimit for Rust, and the schema is Runlimit's
// name for name (tables, columns, the generated capacity_shard column,
// constraints, index, and the SQLSTATEs its triggers raise): services in
// both languages sharing one secret and one database count on the same rows
// and wait on the same locks. The store also serves a schema a Rust service
// created, once [github.com/runlimit/runlimit/migrations.Migrate] has
// adopted it; that package says in which order a mixed deployment migrates.
package postgres
