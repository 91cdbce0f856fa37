package httplimit_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
)

var (
	perMinute = domain.MustPolicy("test.http", "client", 3, time.Minute)
	burst     = domain.MustPolicy("test.http", "burst", 2, time.Minute)
	hourly    = domain.MustPolicy("test.http", "hourly", 5, 10*time.Minute)
)

// requireHeaders checks every header of a response, so that nothing is
// added that the test did not expect.
func requireHeaders(t *testing.T, want map[string]string, w *httptest.ResponseRecorder) {
	t.Helper()
	got := map[string]string{}
	for k, v := range w.Header() {
		require.Len(t, v, 1, "header %s", k)
		got[k] = v[0]
	}
	require.Equal(t, want, got)
}

// rejectHeaders are the headers DefaultReject adds to the fields.
func rejectHeaders(fields map[string]string) map[string]string {
	h := map[string]string{
		"Content-Type":           "text/plain; charset=utf-8",
		"X-Content-Type-Options": "nosniff",
		"Cache-Control":          "no-store",
	}
	for k, v := range fields {
		h[k] = v
	}
	return h
}

func TestMiddlewareAdmits(t *testing.T) {
	t.Parallel()
	f := setup(t)
	next := &recorder{}
	h := f.middleware(t, httplimit.RemoteNetwork, limitOf(perMinute)).Handler(next)

	w := do(h, request("POST", "/", "192.0.2.1:1", "payload"))
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, 1, next.calls)
	require.Equal(t, "payload", next.body, "the handler reads the body untouched")
	require.True(t, next.hasRes)
	require.Equal(t, domain.Allowed, next.result.Outcome())
	require.Equal(t, 1, next.result.Len())
	require.Equal(t, "test.http/client", next.result.Name(0))
	require.True(t, next.result.Policy(0).Equal(perMinute))
	d, ok := next.result.Decision(0)
	require.True(t, ok)
	a, ok := d.Allowance()
	require.True(t, ok)
	_, ok = next.result.Decision(1)
	require.False(t, ok)
	_, _, ok = next.result.ShadowDenied()
	require.False(t, ok)
	require.Equal(t, int64(2), a.Remaining)
	requireHeaders(t, map[string]string{
		"Ratelimit-Policy": `"test.http/client";q=3;w=60`,
		"Ratelimit":        `"test.http/client";r=2;t=60`,
	}, w)

	f.clock.Advance(20500 * time.Millisecond)
	w = do(h, request("GET", "/", "192.0.2.1:2", ""))
	require.Equal(t, `"test.http/client";r=1;t=40`, w.Header().Get("RateLimit"), "t rounds 39.5 s up")
}

func TestMiddlewareDenies(t *testing.T) {
	t.Parallel()
	f := setup(t)
	next := &recorder{}
	h := f.middleware(t, httplimit.RemoteNetwork, limitOf(perMinute)).Handler(next)
	for range 3 {
		require.Equal(t, http.StatusOK, do(h, request("GET", "/", "192.0.2.1:1", "")).Code)
	}
	f.clock.Advance(20500 * time.Millisecond)

	body := &bodyWatcher{r: strings.NewReader("secret form")}
	r := request("POST", "/", "192.0.2.1:1", "")
	r.Body = io.NopCloser(body)
	w := do(h, r)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, 3, next.calls, "the handler never sees the denied request")
	require.Zero(t, body.reads, "the body is not read")
	require.Equal(t, "Too Many Requests\n", w.Body.String())
	requireHeaders(t, rejectHeaders(map[string]string{
		"Ratelimit-Policy": `"test.http/client";q=3;w=60`,
		"Ratelimit":        `"test.http/client";r=0;t=40`,
		"Retry-After":      "40",
	}), w)

	// Another client is counted apart.
	require.Equal(t, http.StatusOK, do(h, request("GET", "/", "192.0.2.2:1", "")).Code)
	// The window ends at 60 s exactly.
	f.clock.Advance(39500 * time.Millisecond)
	require.Equal(t, http.StatusOK, do(h, request("GET", "/", "192.0.2.1:1", "")).Code)
}

// All limits are one batch: a denial by one consumes none of the others.
// RateLimit puts the limit with fewest requests left first; RateLimit-Policy
// the one with the lowest rate, on every response.
func TestMiddlewareBatchIsAtomic(t *testing.T) {
	t.Parallel()
	f := setup(t)
	h := f.middleware(t, httplimit.RemoteNetwork, limitOf(hourly), limitOf(burst)).Handler(&recorder{})
	remote := "192.0.2.1:1"

	w := do(h, request("GET", "/", remote, ""))
	require.Equal(t, `"test.http/burst";r=1;t=60, "test.http/hourly";r=4;t=600`, w.Header().Get("RateLimit"))
	require.Equal(t, `"test.http/hourly";q=5;w=600, "test.http/burst";q=2;w=60`, w.Header().Get("RateLimit-Policy"))
	require.Equal(t, http.StatusOK, do(h, request("GET", "/", remote, "")).Code)

	f.clock.Advance(time.Second)
	w = do(h, request("GET", "/", remote, ""))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, `"test.http/burst";r=0;t=59`, w.Header().Get("RateLimit"), "the hourly limit's state is not known")
	require.Equal(t, `"test.http/hourly";q=5;w=600, "test.http/burst";q=2;w=60`, w.Header().Get("RateLimit-Policy"))
	require.Equal(t, "59", w.Header().Get("Retry-After"))

	f.clock.Advance(59 * time.Second)
	w = do(h, request("GET", "/", remote, ""))
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, `"test.http/burst";r=1;t=60, "test.http/hourly";r=2;t=540`, w.Header().Get("RateLimit"),
		"the denied request consumed nothing of the hourly limit")
}

func TestMiddlewareCost(t *testing.T) {
	t.Parallel()
	f := setup(t)
	h := f.middleware(t, httplimit.RemoteNetwork, httplimit.Limit{Policy: hourly, Cost: 2, Name: "upload"}).Handler(&recorder{})
	var got []string
	for range 3 {
		w := do(h, request("GET", "/", "192.0.2.1:1", ""))
		got = append(got, w.Header().Get("RateLimit"))
	}
	// 5 units at 2 a request: r and q count requests (see Draft11).
	require.Equal(t, []string{`"upload";r=1;t=600`, `"upload";r=0;t=600`, `"upload";r=0;t=600`}, got)
}

func TestMiddlewareShadow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	shadow, err := burst.WithMode(domain.Shadow)
	require.NoError(t, err)
	next := &recorder{}
	h := f.middleware(t, httplimit.RemoteNetwork, limitOf(shadow)).Handler(next)
	for range 2 {
		require.Equal(t, http.StatusOK, do(h, request("GET", "/", "192.0.2.1:1", "")).Code)
	}
	f.clock.Advance(1500 * time.Millisecond)
	w := do(h, request("GET", "/", "192.0.2.1:1", ""))
	require.Equal(t, http.StatusOK, w.Code, "a shadow denial lets the request through")
	require.Equal(t, 3, next.calls)
	require.Equal(t, domain.ShadowDenied, next.result.Outcome())
	i, denial, ok := next.result.ShadowDenied()
	require.True(t, ok)
	require.Zero(t, i)
	require.Equal(t, domain.QuotaExhausted, denial.Reason())
	requireHeaders(t, map[string]string{
		"Ratelimit-Policy": `"test.http/burst";q=2;w=60`,
		"Ratelimit":        `"test.http/burst";r=0;t=59`,
	}, w)
}

func TestMiddlewareStorageCapacity(t *testing.T) {
	t.Parallel()
	f := setupStore(t, memory.Config{MaxKeys: 1})
	var reasons []httplimit.Reason
	cfg := f.config(httplimit.RemoteNetwork, limitOf(perMinute))
	cfg.Reject = func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
		reasons = append(reasons, rej.Reason)
		httplimit.DefaultReject(w, r, rej)
	}
	m, err := httplimit.NewMiddleware(cfg)
	require.NoError(t, err)
	next := &recorder{}
	h := m.Handler(next)
	require.Equal(t, http.StatusOK, do(h, request("GET", "/", "192.0.2.1:1", "")).Code)
	f.clock.Advance(10 * time.Second)

	w := do(h, request("GET", "/", "192.0.2.2:1", ""))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, 1, next.calls)
	require.Equal(t, []httplimit.Reason{httplimit.ReasonCapacity}, reasons)
	requireHeaders(t, rejectHeaders(map[string]string{
		"Ratelimit-Policy": `"test.http/client";q=3;w=60`,
		"Retry-After":      "50", // when the store's earliest entry expires
	}), w)
}

// A storage-capacity denial without a retry time has no Retry-After.
func TestMiddlewareCapacityWithoutRetry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// Build a capacity denial with no retry time through a fake: the memory
	// store always knows one, another store may not.
	fake := &fakeLimiter{decision: capacityWithoutRetry(t)}
	cfg := f.config(httplimit.RemoteNetwork, limitOf(perMinute))
	cfg.Limiter = fake
	m, err := httplimit.NewMiddleware(cfg)
	require.NoError(t, err)
	w := do(m.Handler(&recorder{}), request("GET", "/", "192.0.2.1:1", ""))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Empty(t, w.Header().Values("Retry-After"))
	require.Empty(t, w.Header().Values("RateLimit"))
}

// capacityWithoutRetry returns a storage-capacity denial with no retry
// time, as a store that cannot tell one returns it.
func capacityWithoutRetry(t testing.TB) domain.BatchDecision {
	t.Helper()
	b, err := domain.NewBatch([]domain.Check{domain.NewCheck(perMinute, newHasher(t).KeyString(perMinute, "x"))}, 0)
	require.NoError(t, err)
	b.Observe(0, domain.Observation{Full: true})
	commit, err := b.Evaluate(domain.InstantOf(time.Second))
	require.NoError(t, err)
	require.False(t, commit)
	d, err := b.Decision()
	require.NoError(t, err)
	_, denial, _ := d.Denied()
	require.Equal(t, domain.StorageCapacity, denial.Reason())
	_, has := denial.RetryAfter()
	require.False(t, has)
	return d
}

// Failures never reach the handler and never look like success, on the
// single-check path (one limit) and the batch path (two).
func TestMiddlewareFailsClosed(t *testing.T) {
	t.Parallel()
	errStore := errors.New("store is down")
	keyErr := errors.New("no tenant header")
	for _, limits := range [][]httplimit.Limit{{limitOf(perMinute)}, {limitOf(perMinute), limitOf(hourly)}} {
		policies := `"test.http/client";q=3;w=60`
		allowed := decisionOf(t, memory.Config{MaxKeys: 8}, perMinute, 0, 0)
		if len(limits) == 2 {
			// 5 per 600 s is a lower rate than 3 per 60 s.
			policies = `"test.http/hourly";q=5;w=600, ` + policies
		}
		for _, tc := range []struct {
			name    string
			limiter *fakeLimiter
			key     httplimit.KeyFunc
			remote  string
			reason  httplimit.Reason
			err     error
			checked int
		}{
			{"limiter error", &fakeLimiter{err: errStore}, httplimit.RemoteNetwork, "192.0.2.1:1", httplimit.ReasonLimiter, errStore, 1},
			{"limiter error with an allowed decision", &fakeLimiter{decision: allowed, err: errStore}, httplimit.RemoteNetwork, "192.0.2.1:1", httplimit.ReasonLimiter, errStore, 1},
			{"no decision", &fakeLimiter{}, httplimit.RemoteNetwork, "192.0.2.1:1", httplimit.ReasonLimiter, httplimit.ErrUnknownOutcome, 1},
			{"key error", &fakeLimiter{decision: allowed}, func([]byte, *http.Request) ([]byte, error) { return nil, keyErr }, "192.0.2.1:1", httplimit.ReasonKey, keyErr, 0},
			{"malformed remote address", &fakeLimiter{decision: allowed}, httplimit.RemoteNetwork, "unix-socket", httplimit.ReasonKey, httplimit.ErrRemoteAddr, 0},
		} {
			t.Run(fmt.Sprintf("%d limits/%s", len(limits), tc.name), func(t *testing.T) {
				t.Parallel()
				var got *httplimit.Rejection
				cfg := httplimit.Config{Limiter: tc.limiter, Hasher: newHasher(t), Limits: limits, Key: tc.key}
				cfg.Reject = func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
					c := *rej
					got = &c
					httplimit.DefaultReject(w, r, rej)
				}
				m, err := httplimit.NewMiddleware(cfg)
				require.NoError(t, err)
				next := &recorder{}
				body := &bodyWatcher{r: strings.NewReader("form")}
				r := request("POST", "/", tc.remote, "")
				r.Body = io.NopCloser(body)
				w := do(m.Handler(next), r)
				require.Equal(t, http.StatusServiceUnavailable, w.Code)
				require.Equal(t, "Service Unavailable\n", w.Body.String())
				require.Zero(t, next.calls)
				require.Zero(t, body.reads)
				require.Equal(t, tc.checked, tc.limiter.calls)
				if len(limits) == 1 {
					require.Zero(t, tc.limiter.batches, "one limit takes the single-check path")
				} else {
					require.Equal(t, tc.checked, tc.limiter.batches)
				}
				require.NotNil(t, got)
				require.Equal(t, tc.reason, got.Reason)
				require.ErrorIs(t, got.Err, tc.err)
				_, _, denied := got.Denied()
				require.False(t, denied)
				requireHeaders(t, rejectHeaders(map[string]string{"Ratelimit-Policy": policies}), w)
			})
		}
	}
}

// A limiter that reports fewer decisions than checks does not crash the
// middleware, nor does it let the request through: the limit it did not
// report may have no quota, so the request fails closed.
func TestMiddlewareShortDecision(t *testing.T) {
	t.Parallel()
	fake := &fakeLimiter{decision: decisionOf(t, memory.Config{MaxKeys: 8}, perMinute, 0, 0)}
	m, err := httplimit.NewMiddleware(httplimit.Config{Limiter: fake, Hasher: newHasher(t), Key: httplimit.RemoteNetwork,
		Limits: []httplimit.Limit{limitOf(perMinute), limitOf(hourly)}})
	require.NoError(t, err)
	next := &recorder{}
	w := do(m.Handler(next), request("GET", "/", "192.0.2.1:1", ""))
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.Empty(t, w.Header().Get("RateLimit"))
	require.Zero(t, next.calls)
}

// A RejectFunc owns the whole response.
func TestMiddlewareCustomReject(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cfg := f.config(httplimit.RemoteNetwork, limitOf(burst))
	var seen []string
	cfg.Reject = func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
		retry, ok := rej.RetryAfter()
		require.True(t, ok)
		i, denial, denied := rej.Denied()
		require.True(t, denied)
		require.Zero(t, i)
		require.Equal(t, domain.QuotaExhausted, denial.Reason())
		q := rej.Quotas()
		require.Len(t, q, 1)
		seen = append(seen, rej.Reason.String(), q[0].Name)
		require.Equal(t, http.StatusTooManyRequests, rej.Status())
		w.Header().Set("X-Retry-In", time.Duration(retry*int64(time.Second)).String())
		w.WriteHeader(http.StatusTeapot)
	}
	m, err := httplimit.NewMiddleware(cfg)
	require.NoError(t, err)
	h := m.Handler(&recorder{})
	for range 2 {
		do(h, request("GET", "/", "192.0.2.1:1", ""))
	}
	w := do(h, request("GET", "/", "192.0.2.1:1", ""))
	require.Equal(t, http.StatusTeapot, w.Code)
	require.Equal(t, []string{"quota", "test.http/burst"}, seen)
	requireHeaders(t, map[string]string{"X-Retry-In": "1m0s"}, w)
	require.Empty(t, w.Body.String())
}

// RateLimit-Policy describes the policies: a client sees the same field on
// every response while the limits' remaining counts cross over and
// RateLimit's order turns around.
func TestPolicyFieldStable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tenSeconds := domain.MustPolicy("test.http", "ten-seconds", 2, 10*time.Second)
	h := f.middleware(t, httplimit.RemoteNetwork, limitOf(tenSeconds), limitOf(perMinute)).Handler(&recorder{})
	const policy = `"test.http/client";q=3;w=60, "test.http/ten-seconds";q=2;w=10`
	for i, want := range []struct {
		status    int
		rateLimit string
	}{
		{http.StatusOK, `"test.http/ten-seconds";r=1;t=10, "test.http/client";r=2;t=60`},
		{http.StatusOK, `"test.http/client";r=1;t=50, "test.http/ten-seconds";r=1;t=10`},
		{http.StatusOK, `"test.http/client";r=0;t=40, "test.http/ten-seconds";r=1;t=10`},
		{http.StatusTooManyRequests, `"test.http/client";r=0;t=30`},
	} {
		w := do(h, request("GET", "/", "192.0.2.1:1", ""))
		require.Equal(t, want.status, w.Code, "response %d", i)
		require.Equal(t, want.rateLimit, w.Header().Get("RateLimit"), "response %d", i)
		require.Equal(t, []string{policy}, w.Header().Values("RateLimit-Policy"), "response %d", i)
		f.clock.Advance(10 * time.Second)
	}
}

// Nested middleware: the inner one's fields include the outer one's, and
// its Retry-After is never earlier than the end of a window the response
// reports as exhausted.
func TestMiddlewareNested(t *testing.T) {
	t.Parallel()
	f := setup(t)
	outer := f.middleware(t, httplimit.RemoteNetwork, limitOf(burst))
	short := domain.MustPolicy("test.http", "short", 1, 10*time.Second)
	inner := f.middleware(t, httplimit.RemoteNetwork, limitOf(short))
	next := &recorder{}
	h := outer.Handler(inner.Handler(next))

	w := do(h, request("GET", "/", "192.0.2.1:1", ""))
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, `"test.http/short";r=0;t=10, "test.http/burst";r=1;t=60`, w.Header().Get("RateLimit"))
	require.Equal(t, `"test.http/burst";q=2;w=60, "test.http/short";q=1;w=10`, w.Header().Get("RateLimit-Policy"))
	require.True(t, next.hasRes)
	res := next.result
	require.Equal(t, "test.http/short", res.Name(0))
	out, ok := res.Outer()
	require.True(t, ok)
	require.Equal(t, "test.http/burst", out.Name(0))
	_, ok = out.Outer()
	require.False(t, ok)

	f.clock.Advance(10 * time.Second)
	require.Equal(t, http.StatusOK, do(h, request("GET", "/", "192.0.2.1:1", "")).Code) // burst now r=0, t=50
	f.clock.Advance(time.Second)
	w = do(h, request("GET", "/", "192.0.2.1:1", ""))
	// The outer limit denies first: the inner one is never checked.
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, `"test.http/burst";r=0;t=49`, w.Header().Get("RateLimit"))
	require.Equal(t, "49", w.Header().Get("Retry-After"))
}

// The inner denial's Retry-After waits for the outer limit that this
// response reports as exhausted.
func TestRetryAfterCoversExhaustedLimits(t *testing.T) {
	t.Parallel()
	f := setup(t)
	outer := f.middleware(t, httplimit.RemoteNetwork, limitOf(burst))
	short := domain.MustPolicy("test.http", "short", 1, 10*time.Second)
	// Separate clients for the two limits: the inner one keys on a header.
	inner := f.middleware(t, func(dst []byte, r *http.Request) ([]byte, error) {
		return append(dst, r.Header.Get("X-Tenant")...), nil
	}, limitOf(short))
	h := outer.Handler(inner.Handler(&recorder{}))
	r := request("GET", "/", "192.0.2.1:1", "")
	r.Header.Set("X-Tenant", "t1")
	require.Equal(t, http.StatusOK, do(h, r).Code)
	r = request("GET", "/", "192.0.2.2:1", "")
	r.Header.Set("X-Tenant", "t1")
	f.clock.Advance(2 * time.Second)
	// Client 2 takes its burst's last unit (r=0, t=60) and is denied by the
	// tenant limit for 8 s: retrying in 8 s would meet the burst limit.
	do(outer.Handler(&recorder{}), request("GET", "/", "192.0.2.2:1", ""))
	w := do(h, r)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, `"test.http/burst";r=0;t=60, "test.http/short";r=0;t=8`, w.Header().Get("RateLimit"))
	require.Equal(t, "60", w.Header().Get("Retry-After"))
}

func TestServeMuxPatterns(t *testing.T) {
	t.Parallel()
	f := setup(t)
	m := f.middleware(t, httplimit.RemoteNetwork, limitOf(burst))
	mux := http.NewServeMux()
	var ids []string
	mux.Handle("GET /items/{id}", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ids = append(ids, r.PathValue("id"))
		_, ok := httplimit.FromContext(r.Context())
		require.True(t, ok)
	})))
	mux.Handle("POST /login", m.Handler(&recorder{}))

	require.Equal(t, http.StatusOK, do(mux, request("GET", "/items/42", "192.0.2.1:1", "")).Code)
	require.Equal(t, http.StatusOK, do(mux, request("POST", "/login", "192.0.2.1:1", "")).Code)
	// The route's method is checked by the mux before the limit.
	require.Equal(t, http.StatusMethodNotAllowed, do(mux, request("DELETE", "/items/42", "192.0.2.1:1", "")).Code)
	require.Equal(t, http.StatusTooManyRequests, do(mux, request("GET", "/items/43", "192.0.2.1:1", "")).Code)
	require.Equal(t, []string{"42"}, ids)

	// Around a whole mux, path values still reach the handler.
	all := http.NewServeMux()
	all.HandleFunc("GET /users/{name}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.PathValue("name"))
	})
	w := do(f.middleware(t, httplimit.RemoteNetwork, limitOf(perMinute)).Handler(all), request("GET", "/users/ann", "192.0.2.9:1", ""))
	require.Equal(t, "ann", w.Body.String())
}

// Handler has the shape routers take.
func TestRouterMiddlewareShape(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var mw func(http.Handler) http.Handler = f.middleware(t, httplimit.RemoteNetwork, limitOf(burst)).Handler
	chain := func(h http.Handler, mws ...func(http.Handler) http.Handler) http.Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			h = mws[i](h)
		}
		return h
	}
	logged := 0
	logger := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { logged++; next.ServeHTTP(w, r) })
	}
	h := chain(&recorder{}, logger, mw)
	codes := []int{}
	for range 3 {
		codes = append(codes, do(h, request("GET", "/", "192.0.2.1:1", "")).Code)
	}
	require.Equal(t, []int{200, 200, 429}, codes)
	require.Equal(t, 3, logged)
	// A nil handler fails closed rather than panicking (TestNilHandlerFailsClosed).
	require.NotPanics(t, func() { mw(nil) })
	require.Equal(t, http.StatusServiceUnavailable, do(mw(nil), request("GET", "/", "192.0.2.2:1", "")).Code)
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	f := setup(t)
	shadow, err := burst.WithMode(domain.Shadow)
	require.NoError(t, err)
	key := httplimit.RemoteNetwork
	for _, tc := range []struct {
		name  string
		cfg   httplimit.Config
		field string
	}{
		{"no key", httplimit.Config{Limiter: f.limiter, Hasher: f.hasher, Limits: []httplimit.Limit{limitOf(burst)}}, "Key"},
		{"no limiter", httplimit.Config{Hasher: f.hasher, Limits: []httplimit.Limit{limitOf(burst)}, Key: key}, "Limiter"},
		{"no hasher", httplimit.Config{Limiter: f.limiter, Limits: []httplimit.Limit{limitOf(burst)}, Key: key}, "Hasher"},
		{"no limits", f.config(key), "Limits"},
		{"too many limits", f.config(key, make([]httplimit.Limit, 33)...), "Limits"},
		{"zero policy", f.config(key, httplimit.Limit{}), "Limits[0].Policy"},
		{"bad name", f.config(key, httplimit.Limit{Policy: burst, Name: "a\r\nb"}), "Limits[0].Name"},
		{"long name", f.config(key, httplimit.Limit{Policy: burst, Name: strings.Repeat("n", 129)}), "Limits[0].Name"},
		{"negative cost", f.config(key, httplimit.Limit{Policy: burst, Cost: -1}), "Limits[0].Cost"},
		{"cost above limit", f.config(key, httplimit.Limit{Policy: burst, Cost: 3}), "Limits[0].Cost"},
		{"mixed modes", f.config(key, limitOf(perMinute), limitOf(shadow)), "Limits[1].Policy"},
		{"same policy twice", f.config(key, limitOf(burst), httplimit.Limit{Policy: burst, Name: "other"}), "Limits[1].Policy"},
		{"same name twice", f.config(key, limitOf(burst), httplimit.Limit{Policy: perMinute, Name: "test.http/burst"}), "Limits[1].Name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := httplimit.NewMiddleware(tc.cfg)
			var ce *httplimit.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.field, ce.Field)
			require.ErrorIs(t, err, httplimit.ErrInvalidConfig)
		})
	}
	// The longest name is accepted.
	_, err = httplimit.NewMiddleware(f.config(key, httplimit.Limit{Policy: burst, Name: strings.Repeat("n", 128)}))
	require.NoError(t, err)
	_, err = httplimit.NewGuard(f.config(key, limitOf(burst)))
	var ce *httplimit.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Key", ce.Field)
}
