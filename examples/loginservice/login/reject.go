package login

import (
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
// login the service could not judge.
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
		if status != http.StatusTooManyRequests {
			body, level = bodyUnavailable, slog.LevelError
		}
		logger.LogAttrs(r.Context(), level, "login: request refused", attrs...)
		w.Header().Del("Content-Length")
		writeJSON(w, status, body)
	}
}
