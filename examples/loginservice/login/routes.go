package login

import (
	"fmt"
	"net/http"

	"go.uber.org/fx"
)

// RoutesGroup is the fx value group of the [Route] values the service's
// mux serves. A constructor adds a route by returning one into it:
//
//	fx.Provide(fx.Annotate(newMetricsRoute, fx.ResultTags(`group:"loginservice.routes"`)))
const RoutesGroup = "loginservice.routes"

// Route is one pattern of the service's http.ServeMux and its handler.
type Route struct {
	// Pattern is an http.ServeMux pattern, such as "POST /login".
	Pattern string
	// Handler serves it.
	Handler http.Handler
}

// routeResult puts a constructor's Route into [RoutesGroup].
type routeResult struct {
	fx.Out

	Route Route `group:"loginservice.routes"`
}

type muxParams struct {
	fx.In

	Routes []Route `group:"loginservice.routes"`
}

// newMux serves every route of the group. Two routes whose patterns
// conflict are an error, where http.ServeMux would panic.
func newMux(p muxParams) (mux *http.ServeMux, err error) {
	mux = http.NewServeMux()
	for _, rt := range p.Routes {
		if err := handle(mux, rt); err != nil {
			return nil, err
		}
	}
	return mux, nil
}

func handle(mux *http.ServeMux, rt Route) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("login: route %q: %v", rt.Pattern, p)
		}
	}()
	mux.Handle(rt.Pattern, rt.Handler)
	return nil
}
