package httplimit_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
)

// A RejectFunc owns status, headers and body, but a refusal never answers
// 1xx, 2xx or 304: whatever it does short of a redirect, 4xx or 5xx
// status, the client gets the rejection's status, 429 for a denial and 503
// for a failure.
func TestRejectNeverAnswersSuccess(t *testing.T) {
	t.Parallel()
	for _, rc := range []struct {
		name   string
		reject func(w http.ResponseWriter) // rej.Status() is not passed: the writer must supply it
		status int                         // 0: the rejection's
		body   string
	}{
		{"body without a status", func(w http.ResponseWriter) { _, _ = io.WriteString(w, "slow down") }, 0, "slow down"},
		{"nothing written", func(w http.ResponseWriter) { w.Header().Set("X-Refused", "yes") }, 0, ""},
		{"explicit 200", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "ok")
		}, 0, "ok"},
		{"explicit 204", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }, 0, ""},
		{"informational 103", func(w http.ResponseWriter) { w.WriteHeader(http.StatusEarlyHints) }, 0, ""},
		// 304 tells a client with a cached copy that its copy is still
		// good: it would show the cached success.
		{"not modified 304", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotModified) }, 0, ""},
		{"flush through http.Flusher", func(w http.ResponseWriter) { w.(http.Flusher).Flush() }, 0, ""},
		{"flush through ResponseController", func(w http.ResponseWriter) {
			if err := http.NewResponseController(w).Flush(); err != nil {
				panic(err)
			}
		}, 0, ""},
		{"a redirect is kept", func(w http.ResponseWriter) {
			w.Header().Set("Location", "/slow-down")
			w.WriteHeader(http.StatusSeeOther)
		}, http.StatusSeeOther, ""},
		{"an error status is kept", func(w http.ResponseWriter) { w.WriteHeader(http.StatusTeapot) }, http.StatusTeapot, ""},
	} {
		for _, tc := range []struct {
			name   string
			status int
			serve  func(t *testing.T, reject httplimit.RejectFunc) *httptest.ResponseRecorder
		}{
			{"denial", http.StatusTooManyRequests, func(t *testing.T, reject httplimit.RejectFunc) *httptest.ResponseRecorder {
				f := setup(t)
				cfg := f.config(httplimit.RemoteNetwork, limitOf(burst))
				cfg.Reject = reject
				m, err := httplimit.NewMiddleware(cfg)
				require.NoError(t, err)
				h := m.Handler(&recorder{})
				for range 2 {
					require.Equal(t, http.StatusOK, do(h, request("GET", "/", "192.0.2.1:1", "")).Code)
				}
				return do(h, request("GET", "/", "192.0.2.1:1", ""))
			}},
			{"failure", http.StatusServiceUnavailable, func(t *testing.T, reject httplimit.RejectFunc) *httptest.ResponseRecorder {
				m, err := httplimit.NewMiddleware(httplimit.Config{
					Limiter: &fakeLimiter{err: errors.New("store is down")}, Hasher: newHasher(t),
					Limits: []httplimit.Limit{limitOf(burst)}, Key: httplimit.RemoteNetwork, Reject: reject,
				})
				require.NoError(t, err)
				return do(m.Handler(&recorder{}), request("GET", "/", "192.0.2.1:1", ""))
			}},
			{"guard failure", http.StatusServiceUnavailable, func(t *testing.T, reject httplimit.RejectFunc) *httptest.ResponseRecorder {
				g, err := httplimit.NewGuard(httplimit.Config{
					Limiter: &fakeLimiter{err: errors.New("store is down")}, Hasher: newHasher(t),
					Limits: []httplimit.Limit{limitOf(burst)}, Reject: reject,
				})
				require.NoError(t, err)
				w := newRecorder()
				_, ok := g.Admit(w, request("POST", "/", "192.0.2.1:1", ""), []byte("alice@example.com"))
				require.False(t, ok)
				return w
			}},
		} {
			t.Run(rc.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				calls := 0
				w := tc.serve(t, func(w http.ResponseWriter, _ *http.Request, _ *httplimit.Rejection) {
					calls++
					rc.reject(w)
				})
				require.Equal(t, 1, calls)
				want := rc.status
				if want == 0 {
					want = tc.status
				}
				require.Equal(t, want, w.Code)
				require.Equal(t, rc.body, w.Body.String())
				if rc.name == "nothing written" {
					require.Equal(t, "yes", w.Header().Get("X-Refused"), "headers set before the status are sent")
				}
			})
		}
	}
}

// deadlineWriter is a ResponseWriter that cannot flush but can take a
// write deadline, as http.ResponseController finds through Unwrap.
type deadlineWriter struct {
	rec       *httptest.ResponseRecorder
	deadlines int
}

func (d *deadlineWriter) Header() http.Header              { return d.rec.Header() }
func (d *deadlineWriter) Write(p []byte) (int, error)      { return d.rec.Write(p) }
func (d *deadlineWriter) WriteHeader(code int)             { d.rec.WriteHeader(code) }
func (d *deadlineWriter) SetWriteDeadline(time.Time) error { d.deadlines++; return nil }

// http.ResponseController reaches the request's ResponseWriter through the
// RejectFunc's, and a flush it cannot make is reported, after the status.
func TestRejectWriterUnwraps(t *testing.T) {
	t.Parallel()
	inner := &deadlineWriter{rec: httptest.NewRecorder()}
	var flushErr, deadlineErr error
	m, err := httplimit.NewMiddleware(httplimit.Config{
		Limiter: &fakeLimiter{err: errors.New("store is down")}, Hasher: newHasher(t),
		Limits: []httplimit.Limit{limitOf(burst)}, Key: httplimit.RemoteNetwork,
		Reject: func(w http.ResponseWriter, _ *http.Request, _ *httplimit.Rejection) {
			rc := http.NewResponseController(w)
			deadlineErr = rc.SetWriteDeadline(time.Time{})
			flushErr = rc.Flush()
		},
	})
	require.NoError(t, err)
	m.Handler(&recorder{}).ServeHTTP(inner, request("GET", "/", "192.0.2.1:1", ""))
	require.NoError(t, deadlineErr)
	require.Equal(t, 1, inner.deadlines)
	require.ErrorIs(t, flushErr, http.ErrNotSupported)
	require.Equal(t, http.StatusServiceUnavailable, inner.rec.Code)
}
