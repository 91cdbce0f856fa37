package runlimitfx_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// TestModuleBorrowsTheGraphStore: a ports.Store in the graph is the host's
// store, used and never closed.
func TestModuleBorrowsTheGraphStore(t *testing.T) {
	t.Parallel()
	store := newHostStore(t)
	var got provided
	fxApp := fxtest.New(t, runlimitfx.Module,
		fx.Supply(wiring.Config{KeySecret: wiring.NewSecret(testSecret)}),
		fx.Supply(fx.Annotate(store, fx.As(new(ports.Store)))),
		fx.Populate(&got),
	).RequireStart()

	p := loginPolicy(t, "auth.login")
	require.True(t, check(t, got.Limiter, got.Hasher, p, "user").PermitsRequest())
	stats, err := store.Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(1), stats.Entries, "the check went to the host's store")
	fxApp.RequireStop()
	require.Zero(t, store.closes.Load(), "a store from the graph is borrowed")
}

// TestModuleClosesTheStoreItOpened: Config.NewStoreFunc's store is the
// module's, closed on stop.
func TestModuleClosesTheStoreItOpened(t *testing.T) {
	t.Parallel()
	store := newHostStore(t)
	var got provided
	fxApp := fxtest.New(t, runlimitfx.Module,
		fx.Supply(wiring.Config{
			NewStoreFunc: func(context.Context) (ports.Store, error) { return store, nil },
			KeySecret:    wiring.NewSecret(testSecret),
		}),
		fx.Supply(fx.Annotate(newHostStore(t), fx.As(new(ports.Store)))), // ignored: the Config names one
		fx.Populate(&got),
	).RequireStart()
	require.True(t, check(t, got.Limiter, got.Hasher, loginPolicy(t, "auth.login"), "user").PermitsRequest())
	stats, err := store.Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(1), stats.Entries, "the check went to NewStoreFunc's store")
	fxApp.RequireStop()
	require.Equal(t, int32(1), store.closes.Load())
}

// events is an Observer that records the limiter of each event under its
// name.
type events struct {
	name string
	mu   *sync.Mutex
	log  *[]string
}

func (e events) ObserveAdmission(ev app.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	*e.log = append(*e.log, e.name+":"+ev.Outcome.String())
}

// TestModuleCollectsObservers: the value group's observers and
// Config.Observer each see every admission.
func TestModuleCollectsObservers(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		log []string
	)
	cfg := memoryConfig(t)
	cfg.Observer = events{"config", &mu, &log}
	asObserver := func(name string) any {
		return fx.Annotate(func() app.Observer { return events{name, &mu, &log} },
			fx.ResultTags(`group:"runlimit.observers"`))
	}
	var got provided
	fxApp := fxtest.New(t, runlimitfx.Module, fx.Supply(cfg),
		fx.Provide(asObserver("metrics"), asObserver("audit")),
		fx.Populate(&got),
	).RequireStart()
	defer fxApp.RequireStop()

	require.True(t, check(t, got.Limiter, got.Hasher, loginPolicy(t, "auth.login"), "user").PermitsRequest())
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "config:allowed", log[0], "Config.Observer comes first")
	require.ElementsMatch(t, []string{"config:allowed", "metrics:allowed", "audit:allowed"}, log)
}

// TestModuleLogsToTheGraphLogger: a *slog.Logger in the graph gets the
// Runtime's records; Config.Logger, when set, wins.
func TestModuleLogsToTheGraphLogger(t *testing.T) {
	t.Parallel()
	var graph, own bytes.Buffer
	fxApp := fxtest.New(t, runlimitfx.Module, fx.Supply(memoryConfig(t)),
		fx.Supply(slog.New(slog.NewTextHandler(&graph, nil))),
		fx.Invoke(func(*app.Limiter) {}),
	).RequireStart()
	fxApp.RequireStop()
	require.Contains(t, graph.String(), `msg="runlimit: started" backend=memory`)
	require.Contains(t, graph.String(), `msg="runlimit: stopped" backend=memory`)

	cfg := memoryConfig(t)
	cfg.Logger = slog.New(slog.NewTextHandler(&own, nil))
	graph.Reset()
	fxApp = fxtest.New(t, runlimitfx.Module, fx.Supply(cfg),
		fx.Supply(slog.New(slog.NewTextHandler(&graph, nil))),
		fx.Invoke(func(*app.Limiter) {}),
	).RequireStart()
	fxApp.RequireStop()
	require.Contains(t, own.String(), `msg="runlimit: started"`)
	require.Empty(t, graph.String())
}

// TestModuleProvidesReadiness: ReadyFunc follows the application's
// lifecycle.
func TestModuleProvidesReadiness(t *testing.T) {
	t.Parallel()
	var ready runlimitfx.ReadyFunc
	fxApp := fxtest.New(t, runlimitfx.Module, fx.Supply(memoryConfig(t)), fx.Populate(&ready))
	ctx := context.Background()
	require.ErrorIs(t, ready(ctx), wiring.ErrNotStarted)
	fxApp.RequireStart()
	require.NoError(t, ready(ctx))
	fxApp.RequireStop()
	require.ErrorIs(t, ready(ctx), wiring.ErrClosed)
}

// TestNewWithoutFx: New, the module's constructor, works without fx, as
// fx's guidance for modules asks.
func TestNewWithoutFx(t *testing.T) {
	t.Parallel()
	lc := fxtest.NewLifecycle(t)
	res, err := runlimitfx.New(runlimitfx.Params{Config: memoryConfig(t), Lifecycle: lc})
	require.NoError(t, err)
	lc.RequireStart()
	d, err := res.PortLimiter.Check(context.Background(), domain.NewCheck(loginPolicy(t, "x"), res.KeyHasher.KeyString(loginPolicy(t, "x"), "u")))
	require.NoError(t, err)
	require.True(t, d.PermitsRequest())
	require.NoError(t, res.Ready(context.Background()))
	lc.RequireStop()
}
