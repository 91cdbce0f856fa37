package httplimit_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// A RejectFunc that logs why the limiter failed, then answers as
// DefaultReject does. By default a failing limiter leaves only its 503:
// nothing logs it. Here the store is closed after the first request, as a
// store that stopped answering would be, and the second request's 503 leaves
// a record. Rejection.Err holds no subject or key, so it is safe to log.
func ExampleRejectFunc() {
	store, err := memory.New(memory.Config{MaxKeys: 10_000, Clock: memory.NewManualClock()})
	if err != nil {
		panic(err)
	}
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		panic(err)
	}
	hasher, err := domain.NewKeyHasher([]byte("example-only-secret-of-32-bytes!"))
	if err != nil {
		panic(err)
	}
	// A logger without timestamps, for a reproducible example.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))

	perClient := domain.MustPolicy("auth.login", "client", 40, time.Minute)
	m, err := httplimit.NewMiddleware(httplimit.Config{
		Limiter: limiter, Hasher: hasher, Key: httplimit.RemoteNetwork,
		Limits: []httplimit.Limit{{Policy: perClient}},
		Reject: func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
			if rej.Err != nil { // a failure (503); nil for a denial (429)
				logger.LogAttrs(r.Context(), slog.LevelError, "rate limit unavailable",
					slog.String("route", r.Pattern), slog.String("reason", rej.Reason.String()),
					slog.Any("error", rej.Err))
			}
			httplimit.DefaultReject(w, r, rej)
		},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /login", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})))

	for range 2 {
		r := httptest.NewRequest("POST", "/login", nil)
		r.RemoteAddr = "192.0.2.10:50000"
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Println(w.Code)
		store.Close() // the store fails from now on
	}
	// Output:
	// 204
	// level=ERROR msg="rate limit unavailable" route="POST /login" reason=limiter error="runlimit: memory store admit: runlimit: store is closed"
	// 503
}
