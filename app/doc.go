// Package app is Runlimit's limiter service: the [Limiter] that host
// applications call, over any [ports.Store].
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
// Package app links nothing outside the standard library and Runlimit's
// domain and ports: a host that uses only the memory store builds without
// any third-party module.
//
// # Running a whole deployment
//
// Two packages below app build and run a limiter from a configuration:
// [github.com/runlimit/runlimit/app/wiring] opens the store a Config
// describes (memory, PostgreSQL, or a store of the host's), reads the key
// secret, runs the cleanup loop and answers readiness probes, without fx;
// [github.com/runlimit/runlimit/app/runlimitfx] does the same inside an fx
// application.
//
// # Observing decisions
//
// LimiterConfig.Observer receives an [Event] for every admission: which
// limiter, the policies, the outcome, the deciding check's index and denial
// reason, the store's error
// and whether it may have consumed quota, and the store's latency. Feed it
// to metrics or logs. Events never carry subjects or keys, and print
// nothing else, under fmt, encoding/json and log/slog alike. Without an
// observer a limiter runs exactly the unobserved path; with one, an
// admission allocates nothing more. An observer that panics cannot change
// an admission: the panic is recovered, the caller gets the store's
// answer, and LimiterConfig.Logger records it without key material. A
// store that panics is not recovered: the panic reaches the caller, but
// only after every observer has had the admission's event, with
// [ErrStorePanicked].
//
// A store that answers what it cannot have meant (a decision beside an
// error, a decision without an outcome, a batch it reset to another
// number of checks, a nil pointer as its error) fails the admission
// closed with an error matching [domain.ErrBatchProtocol].
//
// An observer that needs the request's context, such as a tracer whose
// span the store's database calls should nest under, implements
// [ContextObserver]: it is called before the store too, and the store runs
// with the context it returns. Only such an observer makes the limiter do
// anything before the store. The OpenTelemetry observer of
// [github.com/runlimit/runlimit/adapters/otelrunlimit] is one.
package app
