// Package app is Runlimit's application layer: the [Limiter] that host
// applications call, and the wiring that builds it over a store.
//
// A limiter validates every check before any storage is touched, applies the
// batch through a [ports.Store] and returns the decision:
//
//	store, _ := memory.New(memory.Config{MaxKeys: 50_000, Shards: 64})
//	limiter, _ := app.NewLimiter(store, app.LimiterConfig{})
//	decision, err := limiter.CheckAll(ctx, []domain.Check{client, identity})
//
// An error means invalid input or a store failure: fail closed and use
// [ports.MayHaveConsumedQuota] to learn whether quota may have been spent.
//
// # Running it from a Config
//
// A [Config] describes a whole deployment: the backend (memory, or
// PostgreSQL from a URL or a pool the host owns), whether to apply the schema
// at start, the environment variable holding the key secret
// (RUNLIMIT_KEY_SECRET by default, at least 32 bytes) and the background
// loop that removes expired counters. [Open] builds and starts a [Runtime]
// from it, without fx:
//
//	runtime, err := app.Open(ctx, app.Config{
//		Backend:     app.BackendPostgres,
//		DatabaseURL: app.NewSecret(os.Getenv("DATABASE_URL")),
//		Migrate:     true,
//	})
//	if err != nil {
//		return err
//	}
//	defer runtime.Close(ctx)
//	key := runtime.KeyHasher().KeyString(policy, subject)
//	decision, err := runtime.Limiter().Check(ctx, domain.NewCheck(policy, key))
//
// Starting applies the schema if asked, checks that the store answers and
// starts the cleanup loop. [Runtime.Close] stops the loop and closes only
// what the Runtime opened: a pool it opened from the URL, never one the host
// gave it. Configuration problems, the secret's included, are a
// [*ConfigError] naming the field. No error text contains the secret; a
// connection error at start may name the database's host, user and name,
// never its password.
//
// # The fx module
//
// [Module] does the same inside an fx application. The host supplies the
// Config (and, optionally, a *pgxpool.Pool); the module provides *[Runtime],
// *[Limiter], [ports.Limiter] and [domain.KeyHasher], and hooks the Runtime's
// start and Close to the application's OnStart and OnStop:
//
//	fx.New(
//		app.Module,
//		fx.Supply(app.Config{Backend: app.BackendPostgres, Migrate: true}),
//		fx.Provide(newPool), // the host's *pgxpool.Pool, borrowed, never closed
//		fx.Invoke(registerHandlers),
//	)
//
// # A memory gate in front of PostgreSQL
//
// The production topology puts a hard-bounded memory store in front of the
// shared PostgreSQL quota, so that attacker-chosen subjects cost bounded
// memory and no database round trip once the gate denies. Set Config.Gate
// and check [Runtime.Gate] first, with policies of its own (distinct policy
// ids), then [Runtime.Limiter]:
//
//	decision, err := runtime.Gate().Check(ctx, domain.NewCheck(gatePolicy, gateKey))
//	if err != nil || !decision.PermitsRequest() {
//		return deny(decision, err)
//	}
//	decision, err = runtime.Limiter().Check(ctx, domain.NewCheck(sharedPolicy, sharedKey))
//
// The two are separate stores: a check admitted by the gate stays consumed
// there even when the shared quota then denies. No batch spans both.
//
// # Observing decisions
//
// LimiterConfig.Observer (or Config.Observer for both limiters of a Runtime)
// receives an [Event] for every admission: which limiter, the policies, the
// outcome, the deciding check's index and denial reason, the store's error
// and whether it may have consumed quota, and the store's latency. Feed it
// to metrics or logs. Events never carry subjects or keys, and print
// nothing else, under fmt, encoding/json and log/slog alike. Without an
// observer a limiter runs exactly the unobserved path; with one, an
// admission allocates nothing more. An observer that panics cannot change
// an admission: the panic is recovered, the caller gets the store's
// answer, and LimiterConfig.Logger records it without key material.
package app
