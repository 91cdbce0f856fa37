package runlimitfx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
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
	// Config has neither a DatabaseURL nor a Pool. Optional.
	Pool *pgxpool.Pool `optional:"true"`
	// Store is borrowed, never closed, as the host's store when the Config
	// names none (Backend empty or [wiring.BackendStore], Store and
	// NewStoreFunc nil). Optional.
	Store ports.Store `optional:"true"`
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
	// the global provider if the host set it before the module's
	// constructor ran, and otherwise none.
	MeterProvider metric.MeterProvider `optional:"true"`
	// TracerProvider records a span per admission and per cleanup pass.
	// Optional: without one, the global provider if the host set it
	// before the module's constructor ran, and otherwise none.
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
// if it fails, since fx then runs no OnStop); OnStop stops the loop and
// closes what the Runtime opened. Config.NewStoreFunc and
// Config.KeySecretFunc are called here, with a background context: fx
// gives constructors none.
//
// A nil Lifecycle, as a Params built by hand rather than by fx may have,
// is an error matching [wiring.ErrInvalidConfig], returned before anything
// is built: the Runtime could never be started or closed.
func New(p Params) (Result, error) {
	if p.Lifecycle == nil {
		return Result{}, fmt.Errorf("%w: runlimitfx: Params.Lifecycle is nil", wiring.ErrInvalidConfig)
	}
	cfg := p.Config
	if cfg.Backend == wiring.BackendPostgres && cfg.DatabaseURL.IsZero() && cfg.Pool.IsZero() {
		cfg.Pool = wiring.BorrowPool(p.Pool)
	}
	if (cfg.Backend == "" || cfg.Backend == wiring.BackendStore) && cfg.Store == nil && cfg.NewStoreFunc == nil {
		cfg.Store = p.Store
	}
	if cfg.Logger == nil {
		cfg.Logger = p.Logger
	}
	// Without a provider in the graph or set globally, the telemetry has
	// no observer and the limiters run unobserved.
	tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: p.MeterProvider, TracerProvider: p.TracerProvider})
	if err != nil {
		return Result{}, err
	}
	observers := []app.Observer{tel.Observer(), cfg.Observer}
	if tel.Observer() != nil {
		cfg.CleanupObserver = joinCleanupObservers(tel, cfg.CleanupObserver)
	}
	cfg.Observer = app.JoinObservers(append(observers, p.Observers...)...)
	r, err := wiring.New(context.Background(), cfg)
	if err != nil {
		return Result{}, err
	}
	h := &hooks{runtime: r, telemetry: tel}
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
	telemetry *otelrunlimit.Telemetry
	unwatch   []func()
}

// start starts the Runtime, then watches its stores' headroom.
func (h *hooks) start(ctx context.Context) error {
	if err := h.runtime.Start(ctx); err != nil {
		return err
	}
	for name, stats := range h.runtime.StatsFuncs() {
		stop, err := h.telemetry.WatchStore(name, stats)
		if err != nil {
			// fx runs no OnStop for a hook whose OnStart failed.
			return errors.Join(err, h.stop(context.WithoutCancel(ctx)))
		}
		h.unwatch = append(h.unwatch, stop)
	}
	return nil
}

// stop stops watching the stores, then closes the Runtime.
func (h *hooks) stop(ctx context.Context) error {
	for _, stop := range h.unwatch {
		stop()
	}
	h.unwatch = nil
	return h.runtime.Close(ctx)
}
