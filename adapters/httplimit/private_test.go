package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/domain"
)

// A limit whose subject is not the client's own, such as a login's
// identity, must not tell one client what others did to that subject: the
// RateLimit field of an admitted request would otherwise be an activity
// oracle on every account. Limit.Private withholds its state unless it
// denies the request itself.

// fieldsOf returns the rate-limit fields of w: RateLimit, RateLimit-Policy
// and Retry-After, "" when absent.
func fieldsOf(w *httptest.ResponseRecorder) [3]string {
	h := w.Header()
	return [3]string{h.Get("RateLimit"), h.Get("RateLimit-Policy"), h.Get("Retry-After")}
}

// privateLogin is the login flow of guard_test.go with the identity limit
// private or not: a middleware on the client network, then a Guard on the
// client and the identity.
func privateLogin(t *testing.T, f fixture, private bool) http.Handler {
	t.Helper()
	m := f.middleware(t, httplimit.RemoteNetwork, limitOf(loginNetwork))
	g, err := httplimit.NewGuard(httplimit.Config{
		Limiter: f.limiter, Hasher: f.hasher,
		Limits: []httplimit.Limit{limitOf(loginClient), {Policy: loginIdentity, Private: private}},
	})
	require.NoError(t, err)
	return m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		identity, err := httplimit.AppendIdentity(nil, r.PostFormValue("identity"))
		require.NoError(t, err)
		client, err := httplimit.RemoteNetwork(nil, r)
		require.NoError(t, err)
		if _, ok := g.Admit(w, r, client, identity); ok {
			w.WriteHeader(http.StatusNoContent)
		}
	}))
}

// TestPrivateGuardIsNoOracle: client 1 tries alice; client 2's admitted
// attempt on alice then reads exactly what client 3's attempt on an
// identity nobody tried reads. Without Private the two differ: the
// identity's r and t give alice's attempts away.
func TestPrivateGuardIsNoOracle(t *testing.T) {
	t.Parallel()
	for _, private := range []bool{false, true} {
		f := setup(t)
		h := privateLogin(t, f, private)
		require.Equal(t, http.StatusNoContent, do(h, loginRequest("192.0.2.1:1", "alice@example.com")).Code)
		f.clock.Advance(10 * time.Second)
		onAlice := do(h, loginRequest("192.0.2.2:1", "alice@example.com"))
		onCarol := do(h, loginRequest("192.0.2.3:1", "carol@example.com"))
		require.Equal(t, http.StatusNoContent, onAlice.Code)
		require.Equal(t, http.StatusNoContent, onCarol.Code)
		if !private {
			require.NotEqual(t, fieldsOf(onCarol), fieldsOf(onAlice), "the oracle this test is about")
			require.Contains(t, onAlice.Header().Get("RateLimit"), `"auth.login/identity";r=0;t=50`)
			continue
		}
		require.Equal(t, fieldsOf(onCarol), fieldsOf(onAlice), "alice's attempts show in another client's answer")
		require.Equal(t, [3]string{
			`"auth.login/client";r=4;t=60, "auth.login/network";r=99;t=60`,
			`"auth.login/identity";q=2;w=60, "auth.login/client";q=5;w=60, "auth.login/network";q=100;w=60`,
			"",
		}, fieldsOf(onAlice), "RateLimit-Policy still describes the identity limit")
	}
}

// TestPrivateGuardDenial: the identity limit's own denial shows its state,
// r=0 and the time until its window ends, and Retry-After is that time:
// the refusal reveals the lockout anyway.
func TestPrivateGuardDenial(t *testing.T) {
	t.Parallel()
	f := setup(t)
	h := privateLogin(t, f, true)
	require.Equal(t, http.StatusNoContent, do(h, loginRequest("192.0.2.1:1", "alice@example.com")).Code)
	f.clock.Advance(10 * time.Second)
	require.Equal(t, http.StatusNoContent, do(h, loginRequest("192.0.2.2:1", "Alice@Example.com")).Code)
	f.clock.Advance(5*time.Second + 300*time.Millisecond)
	w := do(h, loginRequest("192.0.2.3:1", "ALICE@example.com"))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	requireHeaders(t, rejectHeaders(map[string]string{
		"Ratelimit-Policy": `"auth.login/identity";q=2;w=60, "auth.login/client";q=5;w=60, "auth.login/network";q=100;w=60`,
		"Ratelimit":        `"auth.login/identity";r=0;t=45, "auth.login/network";r=99;t=60`,
		"Retry-After":      "45",
	}), w)
}

// TestPrivateGuardWithheldFromWriterAndRejectFunc: a FieldWriter of the
// host's and a RejectFunc reading Rejection.Quotas get no state of a
// private limit that did not deny; the handler still reads its decision
// from the Result.
func TestPrivateGuardWithheldFromWriterAndRejectFunc(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var written, rejected []httplimit.Quota
	fields := httplimit.FieldWriterFunc(func(_ http.Header, qs []httplimit.Quota) {
		written = append(written[:0], qs...)
	})
	reject := func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
		rejected = append(rejected[:0], rej.Quotas()...)
		httplimit.DefaultReject(w, r, rej)
	}
	identity := domain.MustPolicy("auth.login", "identity", 5, time.Minute)
	first, err := httplimit.NewGuard(httplimit.Config{
		Limiter: f.limiter, Hasher: f.hasher, Fields: fields, Reject: reject,
		Limits: []httplimit.Limit{{Policy: identity, Private: true}},
	})
	require.NoError(t, err)
	// A second guard that denies: the first one's quota is reported to
	// its RejectFunc as an enclosing layer's.
	closed := domain.MustPolicy("auth.login", "closed", 1, time.Minute)
	second, err := httplimit.NewGuard(httplimit.Config{
		Limiter: f.limiter, Hasher: f.hasher, Fields: fields, Reject: reject,
		Limits: []httplimit.Limit{limitOf(closed)},
	})
	require.NoError(t, err)
	_, err = f.limiter.Check(t.Context(), domain.NewCheck(closed, f.hasher.KeyString(closed, "all")))
	require.NoError(t, err)

	w := newRecorder()
	r := loginRequest("192.0.2.1:1", "alice@example.com")
	res, ok := first.Admit(w, r, []byte("alice@example.com"))
	require.True(t, ok)
	require.Equal(t, []httplimit.Quota{{Name: "auth.login/identity", Limit: 5, Window: time.Minute, Cost: 1}}, written)
	d, ok := res.Decision(0)
	require.True(t, ok)
	a, ok := d.Allowance()
	require.True(t, ok)
	require.Equal(t, int64(4), a.Remaining, "the handler reads its own limits' state")

	_, ok = second.Admit(w, r.WithContext(httplimit.NewContext(r.Context(), res)), []byte("all"))
	require.False(t, ok)
	require.Len(t, rejected, 2)
	require.Equal(t, httplimit.Quota{Name: "auth.login/identity", Limit: 5, Window: time.Minute, Cost: 1}, rejected[1])
	require.True(t, rejected[0].Known)
	require.Equal(t, "auth.login/closed", rejected[0].Name)
}

// TestPrivateRetryAfterNotRaised: an enclosing layer's private limit that
// an admitted request exhausted does not push another limit's Retry-After
// out to its own window's end, which would give its state away. Without
// Private it does (the Retry-After of an exhausted limit the response
// reports).
func TestPrivateRetryAfterNotRaised(t *testing.T) {
	t.Parallel()
	for _, private := range []bool{false, true} {
		f := setup(t)
		account := domain.MustPolicy("auth.reset", "account", 1, time.Hour)
		client := domain.MustPolicy("auth.reset", "client", 1, time.Minute)
		outer, err := httplimit.NewGuard(httplimit.Config{
			Limiter: f.limiter, Hasher: f.hasher,
			Limits: []httplimit.Limit{{Policy: account, Private: private}},
		})
		require.NoError(t, err)
		inner, err := httplimit.NewGuard(httplimit.Config{
			Limiter: f.limiter, Hasher: f.hasher, Limits: []httplimit.Limit{limitOf(client)},
		})
		require.NoError(t, err)
		_, err = f.limiter.Check(t.Context(), domain.NewCheck(client, f.hasher.KeyString(client, "192.0.2.1")))
		require.NoError(t, err)
		f.clock.Advance(20 * time.Second)

		w := newRecorder()
		r := loginRequest("192.0.2.1:1", "alice@example.com")
		res, ok := outer.Admit(w, r, []byte("alice@example.com"))
		require.True(t, ok)
		_, ok = inner.Admit(w, r.WithContext(httplimit.NewContext(r.Context(), res)), []byte("192.0.2.1"))
		require.False(t, ok)
		require.Equal(t, http.StatusTooManyRequests, w.Code)
		if !private {
			require.Equal(t, "3600", w.Header().Get("Retry-After"), "the exhausted account limit shows")
			continue
		}
		requireHeaders(t, rejectHeaders(map[string]string{
			"Ratelimit-Policy": `"auth.reset/account";q=1;w=3600, "auth.reset/client";q=1;w=60`,
			"Ratelimit":        `"auth.reset/client";r=0;t=40`,
			"Retry-After":      "40",
		}), w)
	}
}

// resetService is POST /accounts/{id}/reset behind a middleware that
// counts the client network and, privately, the account named in the
// path: anyone may ask to reset any account, so the account's count is
// not the client's to read.
func resetService(t *testing.T, f fixture, account domain.Policy) http.Handler {
	t.Helper()
	perNetwork := domain.MustPolicy("auth.reset", "network", 10, time.Minute)
	network := f.middleware(t, httplimit.RemoteNetwork, limitOf(perNetwork))
	byAccount := f.middleware(t, func(dst []byte, r *http.Request) ([]byte, error) {
		return append(dst, r.PathValue("id")...), nil
	}, httplimit.Limit{Policy: account, Private: true})
	mux := http.NewServeMux()
	mux.Handle("POST /accounts/{id}/reset", network.Handler(byAccount.Handler(&recorder{})))
	return mux
}

// TestPrivateMiddleware: the same through a Middleware. Another client's
// admitted request on alice's account reads what one on an untouched
// account reads; the account limit's denial shows r=0 and its
// Retry-After.
func TestPrivateMiddleware(t *testing.T) {
	t.Parallel()
	f := setup(t)
	h := resetService(t, f, domain.MustPolicy("auth.reset", "account", 2, time.Minute))
	require.Equal(t, http.StatusOK, do(h, request("POST", "/accounts/alice/reset", "192.0.2.1:1", "")).Code)
	f.clock.Advance(10 * time.Second)
	onAlice := do(h, request("POST", "/accounts/alice/reset", "192.0.2.2:1", ""))
	onCarol := do(h, request("POST", "/accounts/carol/reset", "192.0.2.3:1", ""))
	require.Equal(t, http.StatusOK, onAlice.Code)
	require.Equal(t, http.StatusOK, onCarol.Code)
	require.Equal(t, fieldsOf(onCarol), fieldsOf(onAlice), "alice's resets show in another client's answer")
	require.Equal(t, [3]string{
		`"auth.reset/network";r=9;t=60`,
		`"auth.reset/account";q=2;w=60, "auth.reset/network";q=10;w=60`,
		"",
	}, fieldsOf(onAlice))

	f.clock.Advance(2500 * time.Millisecond)
	w := do(h, request("POST", "/accounts/alice/reset", "192.0.2.4:1", ""))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	requireHeaders(t, rejectHeaders(map[string]string{
		"Ratelimit-Policy": `"auth.reset/account";q=2;w=60, "auth.reset/network";q=10;w=60`,
		"Ratelimit":        `"auth.reset/account";r=0;t=48, "auth.reset/network";r=9;t=60`,
		"Retry-After":      "48",
	}), w)
}

// TestPrivateShadow: a private limit in shadow mode refuses nothing, so
// its shadow denial shows nothing either: the request that it would have
// refused reads what one on an untouched account reads. The handler
// still finds the shadow denial in its Result.
func TestPrivateShadow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	account, err := domain.MustPolicy("auth.reset", "account", 1, time.Minute).WithMode(domain.Shadow)
	require.NoError(t, err)
	h := resetService(t, f, account)
	require.Equal(t, http.StatusOK, do(h, request("POST", "/accounts/alice/reset", "192.0.2.1:1", "")).Code)
	onAlice := do(h, request("POST", "/accounts/alice/reset", "192.0.2.2:1", ""))
	onCarol := do(h, request("POST", "/accounts/carol/reset", "192.0.2.3:1", ""))
	require.Equal(t, http.StatusOK, onAlice.Code)
	require.Equal(t, fieldsOf(onCarol), fieldsOf(onAlice))
	require.Equal(t, `"auth.reset/network";r=9;t=60`, onAlice.Header().Get("RateLimit"))

	next := &recorder{}
	m := f.middleware(t, func(dst []byte, _ *http.Request) ([]byte, error) {
		return append(dst, "alice"...), nil
	}, httplimit.Limit{Policy: account, Private: true})
	w := do(m.Handler(next), request("POST", "/", "192.0.2.4:1", ""))
	require.Equal(t, http.StatusOK, w.Code)
	require.Empty(t, w.Header().Values("RateLimit"))
	require.True(t, next.hasRes)
	_, _, shadowed := next.result.ShadowDenied()
	require.True(t, shadowed, "the handler still learns of the shadow denial")
}
