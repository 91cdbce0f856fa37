package httplimit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/ports"
)

// Two layers that count one policy id and scope with different limits get
// one default name, "api/client". A response naming both could not be
// read, so the inner layer refuses before it checks anything.
var (
	apiHourly = domain.MustPolicy("api", "client", 1000, time.Hour)
	apiSecond = domain.MustPolicy("api", "client", 10, time.Second)
	apiOther  = domain.MustPolicy("api", "other", 50, time.Minute)
)

// refusal is what a RejectFunc saw, copied out of the call.
type refusal struct {
	reason httplimit.Reason
	err    error
	names  []string
}

// recordingReject records each rejection and answers as DefaultReject.
func recordingReject(seen *[]refusal) httplimit.RejectFunc {
	return func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
		got := refusal{reason: rej.Reason, err: rej.Err}
		for _, q := range rej.Quotas() {
			got.names = append(got.names, q.Name)
		}
		*seen = append(*seen, got)
		httplimit.DefaultReject(w, r, rej)
	}
}

func requireNameClash(t *testing.T, seen []refusal, limit int) {
	t.Helper()
	require.Len(t, seen, 1)
	require.Equal(t, httplimit.ReasonLimiter, seen[0].reason)
	var nc *httplimit.NameClashError
	require.ErrorAs(t, seen[0].err, &nc)
	require.Equal(t, httplimit.NameClashError{Name: "api/client", Limit: limit}, *nc)
	require.ErrorIs(t, seen[0].err, httplimit.ErrNameClash)
	require.False(t, ports.MayHaveConsumedQuota(seen[0].err), "the inner layer checked nothing")
	leakcheck.Check(t, "NameClashError", seen[0].err, []byte("192.0.2.1"), []byte("alice@example.com"))
	// The refusal's quotas name each policy once: the enclosing layer's
	// "api/client" and the inner layer's other limits.
	names := map[string]int{}
	for _, n := range seen[0].names {
		names[n]++
	}
	for n, count := range names {
		require.Equal(t, 1, count, "quota %q named twice", n)
	}
}

func TestNameClashNestedMiddleware(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		limits []httplimit.Limit
		clash  int
		policy string
	}{
		{"one limit", []httplimit.Limit{limitOf(apiSecond)}, 0,
			`"api/client";q=1000;w=3600`},
		{"second limit", []httplimit.Limit{limitOf(apiOther), limitOf(apiSecond)}, 1,
			`"api/client";q=1000;w=3600, "api/other";q=50;w=60`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			var seen []refusal
			outer := f.middleware(t, httplimit.RemoteNetwork, limitOf(apiHourly))
			innerLimiter := &fakeLimiter{}
			inner, err := httplimit.NewMiddleware(httplimit.Config{
				Limiter: innerLimiter, Hasher: f.hasher, Limits: tc.limits,
				Key: httplimit.RemoteNetwork, Reject: recordingReject(&seen),
			})
			require.NoError(t, err)
			next := &recorder{}
			w := do(outer.Handler(inner.Handler(next)), request("GET", "/", "192.0.2.1:1", ""))

			require.Equal(t, http.StatusServiceUnavailable, w.Code)
			require.Zero(t, next.calls, "the handler never runs")
			require.Zero(t, innerLimiter.calls, "nothing is checked")
			requireNameClash(t, seen, tc.clash)
			requireHeaders(t, rejectHeaders(map[string]string{
				"Ratelimit-Policy": tc.policy,
				"Ratelimit":        `"api/client";r=999;t=3600`,
			}), w)
		})
	}
}

// A name of its own resolves the clash: both policies are reported.
func TestNameClashResolvedByName(t *testing.T) {
	t.Parallel()
	f := setup(t)
	outer := f.middleware(t, httplimit.RemoteNetwork, limitOf(apiHourly))
	inner := f.middleware(t, httplimit.RemoteNetwork, httplimit.Limit{Policy: apiSecond, Name: "api/client-burst"})
	w := do(outer.Handler(inner.Handler(&recorder{})), request("GET", "/", "192.0.2.1:1", ""))
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, `"api/client";q=1000;w=3600, "api/client-burst";q=10;w=1`, w.Header().Get("RateLimit-Policy"))
}

// A Guard clashes with the middleware that admitted the request, and with
// a Guard whose result the handler put in the context.
func TestNameClashGuard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		serve func(f fixture, guard *httplimit.Guard) http.Handler
	}{
		{"behind a middleware", func(f fixture, guard *httplimit.Guard) http.Handler {
			m := f.middleware(t, httplimit.RemoteNetwork, limitOf(apiHourly))
			return m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, ok := guard.Admit(w, r, []byte("alice@example.com")); ok {
					w.WriteHeader(http.StatusNoContent)
				}
			}))
		}},
		{"after a guard", func(f fixture, guard *httplimit.Guard) http.Handler {
			first, err := httplimit.NewGuard(httplimit.Config{Limiter: f.limiter, Hasher: f.hasher, Limits: []httplimit.Limit{limitOf(apiHourly)}})
			require.NoError(t, err)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				res, ok := first.Admit(w, r, []byte("192.0.2.1/32"))
				if !ok {
					return
				}
				r = r.WithContext(httplimit.NewContext(r.Context(), res))
				if _, ok := guard.Admit(w, r, []byte("alice@example.com")); ok {
					w.WriteHeader(http.StatusNoContent)
				}
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			var seen []refusal
			guardLimiter := &fakeLimiter{}
			guard, err := httplimit.NewGuard(httplimit.Config{
				Limiter: guardLimiter, Hasher: f.hasher, Limits: []httplimit.Limit{limitOf(apiSecond)},
				Reject: recordingReject(&seen),
			})
			require.NoError(t, err)
			w := do(tc.serve(f, guard), request("POST", "/login", "192.0.2.1:1", ""))
			require.Equal(t, http.StatusServiceUnavailable, w.Code)
			require.Zero(t, guardLimiter.calls, "nothing is checked")
			requireNameClash(t, seen, 0)
			require.Equal(t, `"api/client";q=1000;w=3600`, w.Header().Get("RateLimit-Policy"))
		})
	}
}
