// Package wiring builds and runs Runlimit from a [Config], without fx: the
// store that holds the quota, the [app.Limiter] over it, the key hasher, an
// optional memory gate and the background cleanup loop, started and
// stopped as one [Runtime]. The fx module,
// [github.com/runlimit/runlimit/app/runlimitfx], is a thin layer over it.
//
// # Opening a Runtime
//
// [Open] builds and starts a Runtime; [New] builds one and [Runtime.Start]
// starts it, for hosts that construct before they start:
//
//	runtime, err := wiring.Open(ctx, wiring.Config{
//		Backend:     wiring.BackendPostgres,
//		DatabaseURL: wiring.NewSecret(os.Getenv("DATABASE_URL")),
//		Migrate:     true,
//		KeySecret:   wiring.NewSecret(secret),
//	})
//	if err != nil {
//		return err
//	}
//	defer runtime.Close(ctx)
//	key := runtime.KeyHasher().KeyString(policy, subject)
//	decision, err := runtime.Limiter().Check(ctx, domain.NewCheck(policy, key))
//
// New checks the config and builds everything (calling KeySecretFunc and
// NewStoreFunc), but opens no pool and starts no goroutine, so that an fx
// application whose start fails before the module's OnStart hook runs
// leaves nothing open. Starting
// opens the pool of Config.DatabaseURL, applies the schema if asked,
// checks that every store is ready and starts the cleanup loop; until
// then, checks on a store whose pool is not open yet fail closed with an
// error matching [ErrNotStarted], consuming nothing. A Start that fails
// closes the Runtime: a store that does not answer is a
// [*NotReadyError], a schema Config.Migrate could not apply a
// [*MigrateError].
//
// [Runtime.Close] cancels a Start in progress (which then fails with
// [ErrClosed]), stops the cleanup loop, cancelling a pass in progress,
// then closes the stores and, last, the pool it opened from
// Config.DatabaseURL; it closes nothing the host gave it. Its context
// bounds only how long it waits: the shutdown goes on to its end, so a
// context that is done already still closes a Runtime whose loop is
// between passes. Configuration problems are a [*ConfigError]
// naming the field, matching [ErrInvalidConfig]. No error or log record
// contains the key secret; a connection error at start may name the
// database's host, user and name, never its password.
//
// # Stores
//
// Config.Backend selects the store of the shared quota:
//
//   - [BackendMemory]: a [memory.Store] sized by Config.Memory;
//   - [BackendPostgres]: a [postgres.Store] on a pool opened from
//     Config.DatabaseURL at Start, for the store alone, with its sessions'
//     search_path pinned to pg_catalog, pg_temp (see the postgres
//     package's Server settings), and closed on Close; or on Config.Pool
//     ([BorrowPool], borrowed, never closed);
//   - [BackendStore]: any [ports.Store] of the host's, such as a Redis
//     adapter: Config.Store (borrowed, never closed) or the store
//     Config.NewStoreFunc opens (closed on Close if it is a
//     [ports.Closer]).
//
// Every store gets the same care: the cleanup loop if it is a
// [ports.Cleaner], readiness checks if it is a [ports.ReadinessChecker]
// or a [ports.StatsReporter], and the observers. Config.Gate puts a hard-bounded memory store in front of a
// shared one; see [Runtime.Gate].
//
// # The key secret
//
// The secret comes from exactly one of Config.KeySecret (a [Secret]
// value), Config.KeySecretFunc (a source such as a secret manager, called
// once by New) or the environment variable Config.SecretEnv names,
// RUNLIMIT_KEY_SECRET by default. Every replica sharing a store must use
// the same secret of at least 32 bytes.
//
// # The environment
//
// [ConfigFromEnv] fills a Config from RUNLIMIT_* variables (the Env
// constants list them: backend, database URL, migrate, memory and gate
// sizing, PostgreSQL rows per shard, schema and protocol, cleanup interval
// (at least [MinCleanupInterval], or negative for none) and batch, key
// secret). Its errors are [*EnvError] values naming each unusable
// variable, never its value.
//
// # Readiness and logs
//
// [Runtime.Ready] answers a readiness probe: nil while the Runtime runs and
// every store proves itself ready, through its own readiness check (a
// [ports.ReadinessChecker]) or else its Stats. For PostgreSQL that is
// [postgres.Store.Ready]: the database answers, the session's settings
// are safe, the schema is the version this build needs and an admission's
// statements prepare. A store whose check panics is not ready
// ([ErrReadyPanicked]); Ready itself never panics for it. Config.Logger (default
// [slog.Default]) receives start and stop and the schema migrated (info),
// each cleanup pass (info when it removed counters, debug when it found
// none) and its failures (warning, unless
// Config.CleanupErrorFunc takes them), a failed start, an observer's panic
// and each memory shard poisoned by a panic (error, once per shard, when
// the cleanup loop or a readiness check finds it), never a key, a subject
// or a secret.
//
// # Telemetry
//
// Config.Observer sees every admission of the limiter and the gate, and
// Config.CleanupObserver every cleanup pass; [Runtime.StatsFuncs] hands
// out each store's occupancy for headroom gauges. The OpenTelemetry
// adapter, [github.com/runlimit/runlimit/adapters/otelrunlimit], fills all
// three; the runlimitfx module wires it from the fx graph.
package wiring
