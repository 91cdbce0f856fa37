// Package runlimitfx is Runlimit's fx module, written by fx's guidance for
// modules: a [Module] value, a constructor [New] with a parameter object
// ([Params]) and a result object ([Result]), no fx.Invoke, and nothing
// provided that Runlimit does not own. It is a thin layer over
// [github.com/runlimit/runlimit/app/wiring], which does the work and can be
// used without fx.
//
// # Including the module
//
// Supply a [wiring.Config] and include the module:
//
//	fx.New(
//		runlimitfx.Module,
//		fx.Supply(wiring.Config{
//			Backend:     wiring.BackendPostgres,
//			DatabaseURL: wiring.NewSecret(url),
//			Migrate:     true,
//			KeySecret:   wiring.NewSecret(secret),
//		}),
//		fx.Invoke(registerHandlers), // takes *app.Limiter and domain.KeyHasher
//	)
//
// or provide [wiring.ConfigFromEnv] to read RUNLIMIT_* variables. The
// application's lifecycle runs the Runtime. The constructor builds it
// ([wiring.New]) and opens nothing, so an application whose start fails
// before the module's OnStart hook runs (fx then runs no OnStop for it)
// leaves no pool behind. OnStart opens the pool of Config.DatabaseURL,
// applies the schema when Config.Migrate is set, checks that the stores
// are ready and starts the cleanup loop; if it finishes after its context
// is done, it closes the Runtime and fails, since fx has already given up
// on the start. OnStop stops the loop and closes what the Runtime opened.
//
// # What the graph can add
//
//   - a *pgxpool.Pool, borrowed by the postgres backend when the Config has
//     neither a DatabaseURL nor a Pool;
//   - a [ports.Store], borrowed as the host's store when the Config names
//     none and selects the store backend, by [wiring.BackendStore] or by
//     leaving Backend empty with no other backend's fields set (a Config
//     with Backend empty and Memory, DatabaseURL or Pool set is rejected
//     beside a graph store, as ambiguous: see [Params]);
//     Config.NewStoreFunc instead makes the Runtime open and close it;
//   - the key secret, as a [KeySecret] value or a [KeySecretFunc] source,
//     when the Config names no source of its own (as [wiring.ConfigFromEnv]
//     leaves it without RUNLIMIT_KEY_SECRET);
//   - a *slog.Logger for the Runtime's records, when Config.Logger is nil;
//   - [app.Observer] values in the group "runlimit.observers"
//     ([ObserversGroup]), each handed every admission;
//   - a metric.MeterProvider and a trace.TracerProvider of OpenTelemetry,
//     which record Runlimit's metrics (admissions by policy and outcome,
//     latency, errors, each store's headroom, cleanup runs) and spans
//     (one per admission and per cleanup pass): see
//     [github.com/runlimit/runlimit/adapters/otelrunlimit].
//
// Without a provider in the graph, the module falls back to the global
// ones (otel.GetMeterProvider, otel.GetTracerProvider) when the host has
// set them before the module's constructor runs, as OpenTelemetry's setup
// guides do at the top of main. The choice is made when the limiters are
// built: with no provider then, or only no-op ones, the module installs no
// observer and the limiters run the unobserved path at no cost. A global
// provider set later, in an OnStart hook for instance, is not used; the
// module's start logs a warning that says so and how to fix it. The
// "runlimit: started" log record says whether metrics and tracing are on.
//
// An observer joins the group like this:
//
//	fx.Provide(fx.Annotate(newMetricsObserver,
//		fx.ResultTags(`group:"runlimit.observers"`), fx.As(new(app.Observer))))
//
// # Readiness
//
// [ReadyFunc] is the Runtime's readiness check: wire it into the host's
// readiness probe (see the ReadyFunc example).
package runlimitfx
