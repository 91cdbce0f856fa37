package login

import (
	"io"
	"net/http"
)

// Response bodies. Each is a constant: no response ever carries what the
// request sent, so none can echo an identity, an address or a password.
const (
	bodyOK                 = `{"status":"ok"}`
	bodyInvalidCredentials = `{"error":"invalid credentials"}`
	bodyTooManyRequests    = `{"error":"too many requests"}`
	bodyUnavailable        = `{"error":"service unavailable"}`
	bodyReady              = `{"status":"ready"}`
	bodyNotReady           = `{"status":"unavailable"}`
)

// writeJSON writes a JSON response that no cache may keep: a login answer,
// a refusal and a readiness probe all describe this moment only.
func writeJSON(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body+"\n")
}
