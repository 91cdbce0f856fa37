package login

import (
	"log/slog"
	"net/http"

	"github.com/runlimit/runlimit/adapters/httplimit"
)

// loginHandler serves POST /login behind the client-network middleware: it
// parses the body, checks the client and the identity as one batch, and
// only then looks at the password.
type loginHandler struct {
	clients *httplimit.ClientNetwork
	guard   *httplimit.Guard
	users   *Users
	maxBody int64
	logger  *slog.Logger
}

func (h *loginHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.logShadowDenials(r)
	creds, problem := readCredentials(w, r, h.maxBody)
	if problem != nil {
		writeJSON(w, problem.status, problem.body)
		return
	}
	// The identity is normalized before it is counted, so that
	// "Alice@Example.com" and " alice@example.com" share one quota, and
	// before it is looked up, so that they reach one account.
	identity, err := httplimit.AppendIdentity(nil, creds.Identity)
	if err != nil {
		writeJSON(w, errInvalidIdentity.status, errInvalidIdentity.body)
		return
	}
	// The same client the middleware counted: it has found it once, so
	// this cannot fail unless the request changed; if it does, fail
	// closed.
	client, err := h.clients.AppendSubject(nil, r)
	if err != nil {
		h.logger.LogAttrs(r.Context(), slog.LevelError, "login: client network lost after the middleware", slog.String("error", err.Error()))
		writeJSON(w, http.StatusServiceUnavailable, bodyUnavailable)
		return
	}
	// Client and identity as one atomic batch: both are consumed or
	// neither. A denial or a store failure has been answered.
	if _, ok := h.guard.Admit(w, r, client, identity); !ok {
		return
	}
	if !h.users.Verify(identity, creds.Password) {
		writeJSON(w, http.StatusUnauthorized, bodyInvalidCredentials)
		return
	}
	writeJSON(w, http.StatusOK, bodyOK)
}

// logShadowDenials logs each policy in shadow mode that would have refused
// the request, by its field name: what an operator watches before
// enforcing it.
func (h *loginHandler) logShadowDenials(r *http.Request) {
	for res, ok := httplimit.FromContext(r.Context()); ok; res, ok = res.Outer() {
		if i, _, denied := res.ShadowDenied(); denied {
			h.logger.LogAttrs(r.Context(), slog.LevelInfo, "login: shadow denial", slog.String("policy", res.Name(i)))
		}
	}
}
