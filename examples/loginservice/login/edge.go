package login

import (
	"log/slog"
	"net/http"

	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

type loginParams struct {
	fx.In

	Config   Config
	Policies Policies
	// Runtime has the gate; the module provides it with the hasher.
	Runtime *wiring.Runtime
	Hasher  domain.KeyHasher
	Logger  *slog.Logger
}

// newLoginRoute builds POST /login, outermost first:
//
//  1. a middleware counts the client network (Policies.Network) on the
//     gate before the body is read, so that a spray of attempts costs one
//     memory check each and never reaches the parser or the database;
//  2. when Limits.Trial is set, a second middleware counts Policies.Trial
//     in shadow mode: it never refuses, a batch cannot mix modes, and a
//     middleware of its own keeps its fields in the response;
//  3. the handler parses the body and checks the client and the identity
//     on the shared quota as one batch (a [httplimit.Guard]), then the
//     password.
//
// The gate is the runtime's memory gate in front of PostgreSQL; on the
// memory backend there is one store and the gate's policies live beside
// the shared ones, under their own ids.
func newLoginRoute(p loginParams) (routeResult, error) {
	clients, err := httplimit.NewClientNetwork(p.Config.Clients)
	if err != nil {
		return routeResult{}, err
	}
	reject := newReject(p.Logger)
	shared := p.Runtime.Limiter()
	var gate ports.Limiter = shared
	if g := p.Runtime.Gate(); g != nil {
		gate = g
	}
	network, err := httplimit.NewMiddleware(httplimit.Config{
		Limiter: gate,
		Hasher:  p.Hasher,
		Limits:  []httplimit.Limit{{Policy: p.Policies.Network}},
		Key:     clients.AppendSubject,
		Reject:  reject,
	})
	if err != nil {
		return routeResult{}, err
	}
	guard, err := httplimit.NewGuard(httplimit.Config{
		Limiter: shared,
		Hasher:  p.Hasher,
		// Admit takes the subjects in this order: client, identity. Anyone
		// may try any identity, so its count is not the client's to read:
		// Private keeps it out of the fields unless the identity limit
		// refuses the attempt, which shows the lockout anyway.
		Limits: []httplimit.Limit{{Policy: p.Policies.Client}, {Policy: p.Policies.Identity, Private: true}},
		Reject: reject,
	})
	if err != nil {
		return routeResult{}, err
	}
	var h http.Handler = &loginHandler{
		clients: clients,
		guard:   guard,
		users:   p.Config.Users,
		maxBody: p.Config.MaxBodyBytes,
		logger:  p.Logger,
	}
	if !p.Policies.Trial.IsZero() {
		trial, err := httplimit.NewMiddleware(httplimit.Config{
			Limiter: gate,
			Hasher:  p.Hasher,
			Limits:  []httplimit.Limit{{Policy: p.Policies.Trial}},
			Key:     clients.AppendSubject,
			Reject:  reject,
		})
		if err != nil {
			return routeResult{}, err
		}
		h = trial.Handler(h)
	}
	return routeResult{Route: Route{Pattern: "POST /login", Handler: network.Handler(h)}}, nil
}
