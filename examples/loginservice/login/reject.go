package login

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/ports"
)

// newReject returns the service's [httplimit.RejectFunc]: the library's
// status (429 for a denial, 503 for a failure), its RateLimit,
// RateLimit-Policy and Retry-After fields, and a JSON body in the style of
// the service's other answers. Denials are logged at debug level, since a
// spray makes many; failures at error level, since every one refused a
// login the service could not judge. A check cancelled because the client
// went away (net/http cancels the request's context when its connection
// closes) is no failure of the service, and any client can cause one per
// request: it is logged at debug level too, with client_gone, so that
// clients cannot raise the records an operator is paged on.
func newReject(logger *slog.Logger) httplimit.RejectFunc {
	return func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
		rej.WriteFields(w.Header())
		status := rej.Status()
		body := bodyTooManyRequests
		level := slog.LevelDebug
		attrs := []slog.Attr{slog.String("reason", rej.Reason.String()), slog.Int("status", status)}
		if rej.Err != nil {
			// The library's errors name headers, hops and offsets, never a
			// subject; the store's name the store, never a key.
			attrs = append(attrs, slog.String("error", rej.Err.Error()),
				slog.Bool("may_have_consumed", ports.MayHaveConsumedQuota(rej.Err)))
		}
		switch {
		case status == http.StatusTooManyRequests:
		case clientGone(r, rej.Err):
			body = bodyUnavailable
			attrs = append(attrs, slog.Bool("client_gone", true))
		default:
			body, level = bodyUnavailable, slog.LevelError
		}
		logger.LogAttrs(r.Context(), level, "login: request refused", attrs...)
		w.Header().Del("Content-Length")
		writeJSON(w, status, body)
	}
}

// clientGone reports whether err is the cancellation of r's context, which
// net/http cancels when the client closes the connection: the check was
// stopped for the client's sake, not failed by the store.
func clientGone(r *http.Request, err error) bool {
	return errors.Is(r.Context().Err(), context.Canceled) && errors.Is(err, context.Canceled)
}
