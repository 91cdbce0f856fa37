package login

import (
	"errors"
	"net"
	"net/http"

	"go.uber.org/fx"

	"github.com/runlimit/runlimit/app/runlimitfx"
)

// Options returns the service as fx options: Runlimit's module over
// cfg.Runtime, the policies, POST /login, GET /healthz and an http.Server
// on ln, started and stopped with the application. Until the application
// has started, ln is the caller's to close.
//
//	app := fx.New(login.Options(cfg, ln))
//	app.Run()
//
// More routes join the mux through [RoutesGroup]; observers join the
// runtime through runlimitfx.ObserversGroup.
func Options(cfg Config, ln net.Listener) fx.Option {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return fx.Error(err)
	}
	if ln == nil {
		return fx.Error(errors.New("login: a listener is required"))
	}
	return fx.Options(
		fx.Supply(cfg, cfg.Runtime, cfg.Logger),
		fx.Supply(fx.Annotate(ln, fx.As(new(net.Listener)))),
		// Provides *wiring.Runtime, *app.Limiter, domain.KeyHasher and
		// runlimitfx.ReadyFunc; takes the *slog.Logger above and the
		// observers of runlimitfx.ObserversGroup.
		runlimitfx.Module,
		fx.Provide(
			policiesOf,
			newLoginRoute,
			newHealthRoute,
			newMux,
			newServer,
		),
		fx.Invoke(func(*http.Server) {}),
	)
}

// policiesOf builds the policies of cfg's limits.
func policiesOf(cfg Config) (Policies, error) { return NewPolicies(cfg.Limits) }
