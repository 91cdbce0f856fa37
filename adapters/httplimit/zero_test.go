package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/ports"
)

// TestUnbuiltMiddlewareFailsClosed: a nil or zero Middleware has no
// limiter. Its handler answers 503 and never calls next.
func TestUnbuiltMiddlewareFailsClosed(t *testing.T) {
	t.Parallel()
	middlewares := map[string]*httplimit.Middleware{"nil": nil, "zero": new(httplimit.Middleware)}
	for name, m := range middlewares {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			next := &recorder{}
			var h http.Handler
			require.NotPanics(t, func() { h = m.Handler(next) })
			var w *httptest.ResponseRecorder
			require.NotPanics(t, func() { w = do(h, request("GET", "/", "192.0.2.1:1", "")) })
			require.Equal(t, http.StatusServiceUnavailable, w.Code)
			require.Zero(t, next.calls)
			require.Equal(t, "no-store", w.Header().Get("Cache-Control"))
			require.Empty(t, w.Header().Get(httplimit.HeaderRetryAfter))
		})
	}
}

// TestUnbuiltGuardFailsClosed: a nil or zero Guard refuses with 503.
func TestUnbuiltGuardFailsClosed(t *testing.T) {
	t.Parallel()
	guards := map[string]*httplimit.Guard{"nil": nil, "zero": new(httplimit.Guard)}
	for name, g := range guards {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := httptest.NewRecorder()
			var ok bool
			var res httplimit.Result
			require.NotPanics(t, func() {
				res, ok = g.Admit(w, request("POST", "/login", "192.0.2.1:1", ""), []byte("alice"))
			})
			require.False(t, ok)
			require.Zero(t, res.Len())
			require.Equal(t, http.StatusServiceUnavailable, w.Code)
			require.NotPanics(t, func() { _, ok = g.Admit(nil, nil) })
			require.False(t, ok)
		})
	}
}

// rejectRecorder is a RejectFunc that records the rejection's reason and
// error and answers 418, so a test can tell it ran.
// recordingMiddleware returns a middleware limiting p by key whose
// RejectFunc is a new rejectRecorder, with its config for further use.
func (f fixture) recordingMiddleware(t *testing.T, key httplimit.KeyFunc, p domain.Policy) (*httplimit.Middleware, httplimit.Config, *rejectRecorder) {
	t.Helper()
	rr := &rejectRecorder{}
	cfg := f.config(key, limitOf(p))
	cfg.Reject = rr.reject
	m, err := httplimit.NewMiddleware(cfg)
	require.NoError(t, err)
	return m, cfg, rr
}

type rejectRecorder struct {
	calls  int
	reason httplimit.Reason
	err    error
}

func (rr *rejectRecorder) reject(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
	rr.calls++
	rr.reason, rr.err = rej.Reason, rej.Err
	_ = r.Context() // a RejectFunc may read the request
	w.WriteHeader(http.StatusTeapot)
}

// TestNilHandlerFailsClosed: Middleware.Handler(nil) used to panic. It now
// refuses every request through the RejectFunc before any check, so no
// quota is spent on requests that have nowhere to go.
func TestNilHandlerFailsClosed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	p := domain.MustPolicy("api", "client", 1, time.Minute)
	m, _, rr := f.recordingMiddleware(t, httplimit.RemoteNetwork, p)

	var h http.Handler
	require.NotPanics(t, func() { h = m.Handler(nil) })
	for range 3 {
		w := do(h, request("GET", "/", "192.0.2.1:1", ""))
		require.Equal(t, http.StatusTeapot, w.Code)
	}
	require.Equal(t, 3, rr.calls)
	require.Equal(t, httplimit.ReasonLimiter, rr.reason)
	require.ErrorIs(t, rr.err, httplimit.ErrNilHandler)

	// Nothing was consumed: the one allowed request is still there.
	next := &recorder{}
	require.Equal(t, http.StatusOK, do(m.Handler(next), request("GET", "/", "192.0.2.1:1", "")).Code)
	require.Equal(t, 1, next.calls)
}

// TestNilRequestAndWriter: a nil request reaching a built middleware or
// guard is refused with 503 by DefaultReject (never the configured
// RejectFunc, which may read the request), and a nil ResponseWriter gets
// nothing; neither reaches the handler nor panics.
func TestNilRequestAndWriter(t *testing.T) {
	t.Parallel()
	f := setup(t)
	p := domain.MustPolicy("api", "client", 1, time.Minute)
	m, _, rr := f.recordingMiddleware(t, httplimit.RemoteNetwork, p)
	next := &recorder{}
	h := m.Handler(next)

	w := httptest.NewRecorder()
	require.NotPanics(t, func() { h.ServeHTTP(w, nil) })
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.NotPanics(t, func() { h.ServeHTTP(nil, request("GET", "/", "192.0.2.1:1", "")) })
	require.Zero(t, next.calls)
	require.Zero(t, rr.calls)

	gcfg := f.config(nil, limitOf(domain.MustPolicy("login", "identity", 1, time.Minute)))
	gcfg.Reject = rr.reject
	g, err := httplimit.NewGuard(gcfg)
	require.NoError(t, err)
	w = httptest.NewRecorder()
	var ok bool
	require.NotPanics(t, func() { _, ok = g.Admit(w, nil, []byte("alice")) })
	require.False(t, ok)
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.NotPanics(t, func() { _, ok = g.Admit(nil, request("POST", "/", "192.0.2.1:1", ""), []byte("alice")) })
	require.False(t, ok)
	require.Zero(t, rr.calls)

	// Neither consumed the one allowed check.
	w = httptest.NewRecorder()
	_, ok = g.Admit(w, request("POST", "/", "192.0.2.1:1", ""), []byte("alice"))
	require.True(t, ok)
}

// TestConfigRejectsNilImplementations: a nil *app.Limiter in the Limiter
// interface used to be accepted and then fail every request; a nil
// FieldWriterFunc in Fields used to panic on every admitted request. The
// first is a ConfigError, the second means the default writer.
func TestConfigRejectsNilImplementations(t *testing.T) {
	t.Parallel()
	f := setup(t)
	p := domain.MustPolicy("api", "client", 5, time.Minute)

	var nilLimiter *app.Limiter
	cfg := f.config(httplimit.RemoteNetwork, limitOf(p))
	cfg.Limiter = nilLimiter
	_, err := httplimit.NewMiddleware(cfg)
	require.ErrorIs(t, err, httplimit.ErrInvalidConfig)
	require.ErrorIs(t, err, ports.ErrInvalidConfig)
	gcfg := cfg
	gcfg.Key = nil
	_, err = httplimit.NewGuard(gcfg)
	require.ErrorIs(t, err, httplimit.ErrInvalidConfig)

	cfg = f.config(httplimit.RemoteNetwork, limitOf(p))
	cfg.Fields = httplimit.FieldWriterFunc(nil)
	m, err := httplimit.NewMiddleware(cfg)
	require.NoError(t, err)
	var w *httptest.ResponseRecorder
	require.NotPanics(t, func() { w = do(m.Handler(&recorder{}), request("GET", "/", "192.0.2.1:1", "")) })
	require.Equal(t, http.StatusOK, w.Code)
	require.NotEmpty(t, w.Header().Get(httplimit.HeaderRateLimit), "the default writer wrote the fields")
}

// TestZeroLimiterBehindMiddlewareFailsClosed: a zero app.Limiter cannot be
// told from a built one through the interface; the middleware fails closed
// on its error.
func TestZeroLimiterBehindMiddlewareFailsClosed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cfg := f.config(httplimit.RemoteNetwork, limitOf(domain.MustPolicy("api", "client", 5, time.Minute)))
	cfg.Limiter = new(app.Limiter)
	m, err := httplimit.NewMiddleware(cfg)
	require.NoError(t, err)
	next := &recorder{}
	w := do(m.Handler(next), request("GET", "/", "192.0.2.1:1", ""))
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.Zero(t, next.calls)
}

// TestNilSafeHelpers: the package's small values and functions take nil
// and zero arguments without panicking.
func TestNilSafeHelpers(t *testing.T) {
	t.Parallel()
	var nilCtx context.Context
	var nilRej *httplimit.Rejection
	var zeroRes httplimit.Result
	var nilClients *httplimit.ClientNetwork
	var zeroClients httplimit.ClientNetwork
	addr4 := netip.MustParseAddr("192.0.2.77")
	addr6 := netip.MustParseAddr("2001:db8:1:2:3:4:5:6")

	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"nil Rejection", func(t *testing.T) {
			require.Equal(t, http.StatusServiceUnavailable, nilRej.Status())
			_, _, ok := nilRej.Denied()
			require.False(t, ok)
			_, _, ok = nilRej.Limit(0)
			require.False(t, ok)
			_, ok = nilRej.RetryAfter()
			require.False(t, ok)
			require.Nil(t, nilRej.Quotas())
			h := http.Header{httplimit.HeaderRetryAfter: {"9"}}
			nilRej.WriteFields(h)
			require.Empty(t, h.Get(httplimit.HeaderRetryAfter))
			nilRej.WriteFields(nil)
		}},
		{"DefaultReject nil rejection", func(t *testing.T) {
			w := httptest.NewRecorder()
			httplimit.DefaultReject(w, nil, nil)
			require.Equal(t, http.StatusServiceUnavailable, w.Code)
			httplimit.DefaultReject(nil, nil, nil)
		}},
		{"zero Result", func(t *testing.T) {
			require.Zero(t, zeroRes.Len())
			require.Empty(t, zeroRes.Name(0))
			require.True(t, zeroRes.Policy(0).IsZero())
			require.Empty(t, zeroRes.Name(-1))
			require.True(t, zeroRes.Policy(-1).IsZero())
			_, ok := zeroRes.Decision(0)
			require.False(t, ok)
			_, _, ok = zeroRes.ShadowDenied()
			require.False(t, ok)
			_, ok = zeroRes.Outer()
			require.False(t, ok)
		}},
		{"FromContext nil", func(t *testing.T) {
			_, ok := httplimit.FromContext(nilCtx)
			require.False(t, ok)
		}},
		{"NewContext nil", func(t *testing.T) {
			ctx := httplimit.NewContext(nilCtx, zeroRes)
			require.NotNil(t, ctx)
			require.NoError(t, ctx.Err())
			_, ok := httplimit.FromContext(ctx)
			require.True(t, ok)
		}},
		{"field writers and a nil header", func(t *testing.T) {
			httplimit.Draft11{}.WriteFields(nil, []httplimit.Quota{{Name: "a", Limit: 1}})
			var nilFunc httplimit.FieldWriterFunc
			h := http.Header{}
			nilFunc.WriteFields(h, []httplimit.Quota{{Name: "a", Limit: 1}})
			require.Empty(t, h)
		}},
		{"key functions and a nil request", func(t *testing.T) {
			_, err := httplimit.RemoteNetwork(nil, nil)
			require.ErrorIs(t, err, httplimit.ErrRemoteAddr)
			_, err = nilClients.AppendSubject(nil, nil)
			require.ErrorIs(t, err, httplimit.ErrRemoteAddr)
			_, err = zeroClients.Addr(nil)
			require.ErrorIs(t, err, httplimit.ErrRemoteAddr)
			_, err = nilClients.Prefix(nil)
			require.ErrorIs(t, err, httplimit.ErrRemoteAddr)
		}},
		{"nil and zero ClientNetwork count as the default", func(t *testing.T) {
			// A zero ClientNetwork used to count every client as 0.0.0.0/0
			// and ::/0: one shared quota for the whole internet.
			for _, c := range []*httplimit.ClientNetwork{nilClients, &zeroClients} {
				require.Equal(t, netip.MustParsePrefix("192.0.2.77/32"), c.PrefixOf(addr4))
				require.Equal(t, netip.MustParsePrefix("2001:db8:1:2::/64"), c.PrefixOf(addr6))
				// The zero Addr is nobody's: no network a subject could
				// be built from.
				require.False(t, c.PrefixOf(netip.Addr{}).IsValid())
				subject, err := c.AppendSubject(nil, request("GET", "/", "192.0.2.77:1", ""))
				require.NoError(t, err)
				require.Equal(t, "192.0.2.77/32", string(subject))
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.NotPanics(t, func() { tc.run(t) })
		})
	}
}

// TestZeroValuesPrint: nil and zero values of the package's types print
// under every printer without panicking.
func TestZeroValuesPrint(t *testing.T) {
	t.Parallel()
	leakcheck.CheckPrintable(t, "nil *Middleware", (*httplimit.Middleware)(nil))
	leakcheck.CheckPrintable(t, "zero Middleware", &httplimit.Middleware{})
	leakcheck.CheckPrintable(t, "nil *Guard", (*httplimit.Guard)(nil))
	leakcheck.CheckPrintable(t, "zero Guard", &httplimit.Guard{})
	leakcheck.CheckPrintable(t, "zero Config", httplimit.Config{})
	leakcheck.CheckPrintable(t, "zero Result", httplimit.Result{})
	leakcheck.CheckPrintable(t, "nil *Rejection", (*httplimit.Rejection)(nil))
	leakcheck.CheckPrintable(t, "zero Rejection", &httplimit.Rejection{})
	leakcheck.CheckPrintable(t, "zero ClientNetwork", &httplimit.ClientNetwork{})
	leakcheck.CheckPrintable(t, "zero Quota", httplimit.Quota{})
}

// TestCallerMistakesAreInvalidInput: a nil handler, a nil request and a
// Guard given the wrong number of subjects are the caller's mistakes,
// refused before any check. Their errors match domain.ErrInvalidInput, so
// ports.MayHaveConsumedQuota says nothing was consumed; they used to be
// plain sentinels, which it reports as possibly consumed.
func TestCallerMistakesAreInvalidInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	p := domain.MustPolicy("api", "client", 1, time.Minute)
	m, cfg, rr := f.recordingMiddleware(t, httplimit.RemoteNetwork, p)
	do(m.Handler(nil), request("GET", "/", "192.0.2.1:1", ""))
	nilHandler := rr.err

	cfg.Key = nil
	g, err := httplimit.NewGuard(cfg)
	require.NoError(t, err)
	_, ok := g.Admit(httptest.NewRecorder(), request("POST", "/login", "192.0.2.1:1", ""), []byte("alice"), []byte("bob"))
	require.False(t, ok)
	subjectCount := rr.err

	for name, err := range map[string]error{"nil handler": nilHandler, "subject count": subjectCount, "nil request": httplimit.ErrNilRequest} {
		require.ErrorIs(t, err, domain.ErrInvalidInput, name)
		require.False(t, ports.MayHaveConsumedQuota(err), name)
	}
	require.ErrorIs(t, nilHandler, httplimit.ErrNilHandler)
	require.ErrorIs(t, subjectCount, httplimit.ErrSubjectCount)
}

// TestKeyRefusalsConsumedNothing: the package's own key functions refuse a
// request before any check when its address, its forwarding header or an
// identity cannot be used. Their errors reach the RejectFunc with
// ReasonKey, match domain.ErrInvalidInput, and ports.MayHaveConsumedQuota
// says nothing was consumed; they used to be plain sentinels, which it
// reports as possibly consumed.
func TestKeyRefusalsConsumedNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	p := domain.MustPolicy("api", "client", 1, time.Minute)
	clients, err := httplimit.NewClientNetwork(httplimit.ClientConfig{
		TrustedProxies: prefixes("10.0.0.0/8"),
		Header:         httplimit.XForwardedForHeader,
	})
	require.NoError(t, err)
	identity := func(dst []byte, r *http.Request) ([]byte, error) {
		return httplimit.AppendIdentity(dst, r.Header.Get("X-Login"))
	}
	forged := request("GET", "/", "10.0.0.1:1", "")
	forged.Header.Set("X-Forwarded-For", "not-an-address")
	invisible := request("GET", "/", "192.0.2.1:1", "")
	invisible.Header.Set("X-Login", "admin\u200b@example.com")

	for name, tc := range map[string]struct {
		key  httplimit.KeyFunc
		req  *http.Request
		want error
	}{
		"remote address":    {httplimit.RemoteNetwork, request("GET", "/", "pipe", ""), httplimit.ErrRemoteAddr},
		"forwarding header": {clients.AppendSubject, forged, httplimit.ErrForwarding},
		"identity":          {identity, invisible, httplimit.ErrInvalidIdentity},
	} {
		m, _, rr := f.recordingMiddleware(t, tc.key, p)
		do(m.Handler(http.NotFoundHandler()), tc.req)
		require.Equal(t, 1, rr.calls, name)
		require.Equal(t, httplimit.ReasonKey, rr.reason, name)
		require.ErrorIs(t, rr.err, tc.want, name)
		require.ErrorIs(t, rr.err, domain.ErrInvalidInput, name)
		require.False(t, ports.MayHaveConsumedQuota(rr.err), name)
	}
}
