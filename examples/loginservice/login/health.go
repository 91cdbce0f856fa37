package login

import (
	"log/slog"
	"net/http"

	"github.com/runlimit/runlimit/app/runlimitfx"
)

// newHealthRoute serves GET /healthz from the runtime's readiness check:
// 200 while the runtime runs and every store answers (for PostgreSQL: the
// database answers and the schema is there), 503 before the service has
// started, once it stops and while a store fails. Every login then fails
// closed too, so a load balancer should send no traffic here.
func newHealthRoute(ready runlimitfx.ReadyFunc, logger *slog.Logger) routeResult {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := ready(r.Context()); err != nil {
			// The error may name the database's host; the probe's
			// caller learns only that the service is not ready.
			logger.LogAttrs(r.Context(), slog.LevelWarn, "login: not ready", slog.String("error", err.Error()))
			writeJSON(w, http.StatusServiceUnavailable, bodyNotReady)
			return
		}
		writeJSON(w, http.StatusOK, bodyReady)
	})
	return routeResult{Route: Route{Pattern: "GET /healthz", Handler: h}}
}
