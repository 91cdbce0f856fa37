package httplimit_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
)

// A limiter is any ports.Limiter: a host's decorator, a cache, a client of
// a remote limiter. A decision that does not fit the batch the middleware
// asked about cannot say whether every limit has quota, so the request is
// refused as a failure, never let through: an enforced limit reported as
// shadow-denied, or an allowed batch with fewer or more decisions than
// checks.
func TestInconsistentDecisionFailsClosed(t *testing.T) {
	t.Parallel()
	shadowPolicy, err := perMinute.WithMode(domain.Shadow)
	require.NoError(t, err)
	// Decisions the domain built, for a batch of one.
	shadowDenied := decisionOf(t, memory.Config{MaxKeys: 8}, shadowPolicy, 3, 0)
	require.Equal(t, domain.ShadowDenied, shadowDenied.Outcome())
	allowedOne := decisionOf(t, memory.Config{MaxKeys: 8}, perMinute, 0, 0)
	require.Equal(t, domain.Allowed, allowedOne.Outcome())
	for _, tc := range []struct {
		name     string
		decision domain.BatchDecision
		limits   []httplimit.Limit
	}{
		{"enforced limit reported shadow-denied", shadowDenied, []httplimit.Limit{limitOf(perMinute)}},
		{"enforced batch reported shadow-denied", shadowDenied, []httplimit.Limit{limitOf(perMinute), limitOf(hourly)}},
		{"allowed batch with one decision for two checks", allowedOne, []httplimit.Limit{limitOf(perMinute), limitOf(hourly)}},
	} {
		for _, guard := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/guard=%v", tc.name, guard), func(t *testing.T) {
				t.Parallel()
				fake := &fakeLimiter{decision: tc.decision}
				var got *httplimit.Rejection
				cfg := httplimit.Config{Limiter: fake, Hasher: newHasher(t), Limits: tc.limits}
				cfg.Reject = func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
					c := *rej
					got = &c
					httplimit.DefaultReject(w, r, rej)
				}
				next := &recorder{}
				var h http.Handler
				if guard {
					g, err := httplimit.NewGuard(cfg)
					require.NoError(t, err)
					h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						subjects := make([][]byte, len(tc.limits))
						for i := range subjects {
							subjects[i] = []byte("subject")
						}
						if _, ok := g.Admit(w, r, subjects...); ok {
							next.ServeHTTP(w, r)
						}
					})
				} else {
					cfg.Key = httplimit.RemoteNetwork
					m, err := httplimit.NewMiddleware(cfg)
					require.NoError(t, err)
					h = m.Handler(next)
				}
				w := do(h, request("GET", "/", "192.0.2.1:1", ""))
				require.Equal(t, http.StatusServiceUnavailable, w.Code)
				require.Zero(t, next.calls, "the handler was reached")
				require.Equal(t, 1, fake.calls)
				require.NotNil(t, got)
				require.Equal(t, httplimit.ReasonLimiter, got.Reason)
				require.ErrorIs(t, got.Err, httplimit.ErrUnknownOutcome)
				require.Empty(t, w.Header().Values("RateLimit"), "no state the limiter did not report")
				require.Empty(t, w.Header().Values("Retry-After"))
			})
		}
	}
}

// A consistent shadow denial still lets the request through, on both
// paths, so the check above refuses only what does not fit.
func TestConsistentShadowDenialAdmits(t *testing.T) {
	t.Parallel()
	shadowPolicy, err := perMinute.WithMode(domain.Shadow)
	require.NoError(t, err)
	shadowDenied := decisionOf(t, memory.Config{MaxKeys: 8}, shadowPolicy, 3, 0)
	hourlyShadow, err := hourly.WithMode(domain.Shadow)
	require.NoError(t, err)
	for _, limits := range [][]httplimit.Limit{{{Policy: shadowPolicy}}, {{Policy: shadowPolicy}, {Policy: hourlyShadow}}} {
		fake := &fakeLimiter{decision: shadowDenied}
		m, err := httplimit.NewMiddleware(httplimit.Config{Limiter: fake, Hasher: newHasher(t), Limits: limits, Key: httplimit.RemoteNetwork})
		require.NoError(t, err)
		next := &recorder{}
		w := do(m.Handler(next), request("GET", "/", "192.0.2.1:1", ""))
		require.Equal(t, http.StatusOK, w.Code)
		require.Equal(t, 1, next.calls)
		require.Equal(t, domain.ShadowDenied, next.result.Outcome())
		require.Equal(t, `"test.http/client";r=0;t=60`, w.Header().Get("RateLimit"))
	}
}
