package runlimitfx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/nilcheck"
	"github.com/runlimit/runlimit/ports"
)

// ObserversGroup is the fx value group whose [app.Observer] values the
// module hands every admission, beside Config.Observer.
const ObserversGroup = "runlimit.observers"

// Module wires Runlimit into an fx application: it builds a
// [wiring.Runtime] with [New] and runs it with the application's
// lifecycle. It needs a [wiring.Config] in the graph and provides what
// [Result] lists. It invokes nothing: fx builds the Runtime only when the
// application uses one of its results.
var Module = fx.Module("runlimit", fx.Provide(New))

// ReadyFunc is [wiring.Runtime.Ready] as the module provides it, for a
// host's readiness probe: nil while the Runtime runs and its stores answer.
type ReadyFunc func(ctx context.Context) error

// Params is what [New] takes from the graph.
type Params struct {
	fx.In

	// Config describes the Runtime. Required.
	Config wiring.Config
	// Lifecycle starts the Runtime on OnStart and closes it on OnStop.
	Lifecycle fx.Lifecycle

	// Pool is borrowed, never closed, by the postgres backend when the
	// Config has neither a DatabaseURL nor a Pool. Optional. It is the
	// graph's *pgxpool.Pool as is, so a dump that walks pointers (the spew
	// in testify's failure messages) of Params holding one prints the
	// pool's config, password included; what New builds holds it as a
	// [wiring.BorrowedPool], which never prints it.
	Pool *pgxpool.Pool `optional:"true"`
	// Store is borrowed, never closed, as the host's store when the Config
	// names none (Store and NewStoreFunc nil) and selects the store
	// backend: Backend is [wiring.BackendStore], or empty with nothing
	// set for another backend. A Config whose Backend is empty but whose
	// Memory, DatabaseURL or Pool is set is ambiguous beside a graph
	// store: New rejects it rather than guess, and Backend says which
	// one is meant. With Backend set to memory or postgres the graph's
	// store is left alone. Optional.
	Store ports.Store `optional:"true"`
	// KeySecret is the key secret, for a Config that names no source of
	// its own (KeySecret, KeySecretFunc and SecretEnv unset, as
	// wiring.ConfigFromEnv leaves them without RUNLIMIT_KEY_SECRET). A
	// Config with a source of its own beside it is an error, as is a
	// KeySecretFunc provided beside it. Optional: without either, the
	// Config's source, and without one RUNLIMIT_KEY_SECRET.
	KeySecret KeySecret `optional:"true"`
	// KeySecretFunc returns the key secret, as KeySecret gives it.
	// Optional.
	KeySecretFunc KeySecretFunc `optional:"true"`
	// Logger is the Runtime's logger when Config.Logger is nil. Optional:
	// without one, [slog.Default].
	Logger *slog.Logger `optional:"true"`
	// Observers receive every admission of the limiter and the gate,
	// after Config.Observer. Provide them into the group
	// "runlimit.observers" ([ObserversGroup]).
	Observers []app.Observer `group:"runlimit.observers"`
	// MeterProvider records Runlimit's metrics: admissions by policy and
	// outcome, latency, errors, each store's headroom and the cleanup
	// loop's work (see the otelrunlimit adapter). Optional: without one,
	// the global provider, if the host set it before the module's
	// constructor ran or, when neither provider is in the graph, before
	// the module's OnStart hook (in an OnStart hook appended before it);
	// otherwise none. It is the graph's provider as is, so a dump that
	// walks pointers of Params holding one prints its exporters, whose
	// headers may hold an API key, as Pool prints its password; what New
	// builds never prints it.
	MeterProvider metric.MeterProvider `optional:"true"`
	// TracerProvider records a span per admission and per cleanup pass.
	// Optional: without one, the global provider, found as MeterProvider's
	// is.
	TracerProvider trace.TracerProvider `optional:"true"`
}

// Result is what [New] provides.
type Result struct {
	fx.Out

	// Runtime is the running Runlimit; its Gate is the memory gate of
	// Config.Gate.
	Runtime *wiring.Runtime
	// Limiter is the limiter over the shared quota, also provided as
	// PortLimiter for code that depends on the port only.
	Limiter     *app.Limiter
	PortLimiter ports.Limiter
	// KeyHasher derives subject keys with the key secret.
	KeyHasher domain.KeyHasher
	// Ready is the Runtime's readiness check.
	Ready ReadyFunc
}

// New builds the Runtime that p.Config describes, completed from the graph
// as [Params] says, without touching the network, and appends its hooks to
// p.Lifecycle: OnStart applies the schema if Config.Migrate is set, checks
// that the stores answer and starts the cleanup loop (closing everything
// if it fails, or if it finishes after its context is done, since fx then
// runs no OnStop); OnStop stops the loop and
// closes what the Runtime opened. Config.NewStoreFunc and
// Config.KeySecretFunc (or the graph's [KeySecretFunc]) are called here,
// with a background context, as fx gives constructors none; the secret's
// source gets one that ends after fx.DefaultTimeout.
//
// A nil Lifecycle, as a Params built by hand rather than by fx may have,
// is an error matching [wiring.ErrInvalidConfig], returned before anything
// is built: the Runtime could never be started or closed. So is a Config
// that leaves Backend empty but sets another backend's fields beside a
// ports.Store in the graph (see Params.Store).
func New(p Params) (Result, error) {
	if p.Lifecycle == nil {
		return Result{}, fmt.Errorf("%w: runlimitfx: Params.Lifecycle is nil", wiring.ErrInvalidConfig)
	}
	cfg, err := keySecret(p.Config, p.KeySecret, p.KeySecretFunc)
	if err != nil {
		return Result{}, err
	}
	if cfg.Backend == wiring.BackendPostgres && cfg.DatabaseURL.IsZero() && cfg.Pool.IsZero() {
		cfg.Pool = wiring.BorrowPool(p.Pool)
	}
	if cfg.Store == nil && cfg.NewStoreFunc == nil && !nilcheck.IsNil(p.Store) {
		switch {
		case cfg.Backend == wiring.BackendStore:
			cfg.Store = p.Store
		case cfg.Backend != "":
			// Memory or postgres, as the Config says.
		case !reflect.ValueOf(cfg.Memory).IsZero():
			return Result{}, &wiring.ConfigError{Field: "Memory", Reason: "is set, Backend is empty and the graph provides a ports.Store: " +
				`set Backend to "memory" to use the memory store, or to "store" to use the graph's store`}
		case !cfg.DatabaseURL.IsZero() || !cfg.Pool.IsZero():
			return Result{}, &wiring.ConfigError{Field: "DatabaseURL", Reason: "or Pool is set, Backend is empty and the graph provides a ports.Store: " +
				`set Backend to "postgres" to use the database, or to "store" to use the graph's store`}
		default:
			cfg.Store = p.Store
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = p.Logger
	}
	// Without a provider in the graph or set globally, the telemetry has
	// no observer: the limiters run unobserved.
	tel, err := newTelemetry(p)
	if err != nil {
		return Result{}, err
	}
	observers := []app.Observer{tel.observer(), cfg.Observer}
	cfg.CleanupObserver = wiring.JoinCleanupObservers(tel, cfg.CleanupObserver)
	cfg.Observer = app.JoinObservers(append(observers, p.Observers...)...)
	r, err := wiring.New(context.Background(), cfg)
	if err != nil {
		tel.close()
		return Result{}, err
	}
	h := &hooks{runtime: r, telemetry: tel, logger: cfg.Logger}
	p.Lifecycle.Append(fx.Hook{OnStart: h.start, OnStop: h.stop})
	return Result{
		Runtime:     r,
		Limiter:     r.Limiter(),
		PortLimiter: r.Limiter(),
		KeyHasher:   r.KeyHasher(),
		Ready:       r.Ready,
	}, nil
}

// hooks run a Runtime with the application, and the gauges that watch its
// stores while it runs.
type hooks struct {
	runtime   *wiring.Runtime
	telemetry *telemetry
	logger    *slog.Logger // nil: slog.Default()
	unwatch   []func()
}

// start warns of a global telemetry provider set too late to be used,
// starts the Runtime, then watches its stores' headroom.
func (h *hooks) start(ctx context.Context) error {
	if msg, ok := h.telemetry.lateWarning(); ok {
		logger := h.logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.LogAttrs(ctx, slog.LevelWarn, msg)
	}
	if err := h.runtime.Start(ctx); err != nil {
		// fx runs no OnStop for a hook whose OnStart failed; the Runtime
		// closed itself.
		h.telemetry.close()
		return err
	}
	for name, stats := range h.runtime.StatsFuncs() {
		stop, err := h.telemetry.current().WatchStore(name, stats)
		if err != nil {
			// fx runs no OnStop for a hook whose OnStart failed.
			return errors.Join(err, h.stop(context.WithoutCancel(ctx)))
		}
		h.unwatch = append(h.unwatch, stop)
	}
	if err := ctx.Err(); err != nil {
		// The start outlasted its deadline: fx has already reported it
		// as failed, and its rollback, which runs with this context,
		// calls no OnStop once the context is done. Nothing would stop
		// the Runtime this hook started.
		return errors.Join(err, h.stop(context.WithoutCancel(ctx)))
	}
	return nil
}

// stop stops watching the stores and unregisters the telemetry's
// callbacks, then closes the Runtime.
func (h *hooks) stop(ctx context.Context) error {
	for _, stop := range h.unwatch {
		stop()
	}
	h.unwatch = nil
	h.telemetry.close()
	return h.runtime.Close(ctx)
}
