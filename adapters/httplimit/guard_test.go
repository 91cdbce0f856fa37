package httplimit_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/domain"
)

// The login flow: the middleware counts the client network before the
// body is read; the handler parses the form and checks the client and the
// normalized identity as one batch through a Guard.
var (
	loginNetwork  = domain.MustPolicy("auth.login", "network", 100, time.Minute)
	loginClient   = domain.MustPolicy("auth.login", "client", 5, time.Minute)
	loginIdentity = domain.MustPolicy("auth.login", "identity", 2, time.Minute)
)

type loginService struct {
	handler  http.Handler
	guard    *httplimit.Guard
	admitted []string // identities the guard let through
	results  []httplimit.Result
}

func newLoginService(t *testing.T, f fixture, guardLimiter *fakeLimiter) *loginService {
	t.Helper()
	s := &loginService{}
	m := f.middleware(t, httplimit.RemoteNetwork, limitOf(loginNetwork))
	cfg := httplimit.Config{Limiter: f.limiter, Hasher: f.hasher, Limits: []httplimit.Limit{limitOf(loginClient), limitOf(loginIdentity)}}
	if guardLimiter != nil {
		cfg.Limiter = guardLimiter
	}
	g, err := httplimit.NewGuard(cfg)
	require.NoError(t, err)
	s.guard = g
	mux := http.NewServeMux()
	mux.Handle("POST /login", m.Handler(http.HandlerFunc(s.login)))
	s.handler = mux
	return s
}

func (s *loginService) login(w http.ResponseWriter, r *http.Request) {
	identity, err := httplimit.AppendIdentity(nil, r.PostFormValue("identity"))
	if err != nil {
		http.Error(w, "bad identity", http.StatusBadRequest)
		return
	}
	client, err := httplimit.RemoteNetwork(nil, r)
	if err != nil {
		http.Error(w, "no client", http.StatusServiceUnavailable)
		return
	}
	res, ok := s.guard.Admit(w, r, client, identity)
	if !ok {
		return
	}
	s.admitted = append(s.admitted, string(identity))
	s.results = append(s.results, res)
	w.WriteHeader(http.StatusNoContent)
}

func loginRequest(remote, identity string) *http.Request {
	r := request("POST", "/login", remote, url.Values{"identity": {identity}, "password": {"hunter2"}}.Encode())
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

func TestGuardLogin(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := newLoginService(t, f, nil)

	w := do(s.handler, loginRequest("192.0.2.1:1", "Alice@Example.com"))
	require.Equal(t, http.StatusNoContent, w.Code)
	require.Equal(t, `"auth.login/identity";r=1;t=60, "auth.login/client";r=4;t=60, "auth.login/network";r=99;t=60`, w.Header().Get("RateLimit"))
	require.Equal(t, `"auth.login/identity";q=2;w=60, "auth.login/client";q=5;w=60, "auth.login/network";q=100;w=60`, w.Header().Get("RateLimit-Policy"))
	require.Len(t, s.results, 1)
	require.Equal(t, domain.Allowed, s.results[0].Outcome())
	out, ok := s.results[0].Outer()
	require.True(t, ok, "the guard's result links the middleware's")
	require.Equal(t, "auth.login/network", out.Name(0))

	f.clock.Advance(30 * time.Second)
	// Another spelling of the same identity, from another address.
	require.Equal(t, http.StatusNoContent, do(s.handler, loginRequest("192.0.2.2:1", " ALICE@example.COM ")).Code)
	f.clock.Advance(500 * time.Millisecond)
	w = do(s.handler, loginRequest("192.0.2.3:1", "alice@example.com"))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	requireHeaders(t, rejectHeaders(map[string]string{
		"Ratelimit-Policy": `"auth.login/identity";q=2;w=60, "auth.login/client";q=5;w=60, "auth.login/network";q=100;w=60`,
		"Ratelimit":        `"auth.login/identity";r=0;t=30, "auth.login/network";r=99;t=60`,
		"Retry-After":      "30",
	}), w)
	require.Equal(t, "Too Many Requests\n", w.Body.String())
	require.Equal(t, []string{"alice@example.com", "alice@example.com"}, s.admitted)

	// The denied batch consumed nothing of client 3's quota.
	w = do(s.handler, loginRequest("192.0.2.3:1", "bob@example.com"))
	require.Equal(t, http.StatusNoContent, w.Code)
	require.Contains(t, w.Header().Get("RateLimit"), `"auth.login/client";r=4;t=60`)
}

// The client limit of the guard is shared by every identity the client
// tries: a spray over identities is stopped.
func TestGuardIdentitySpray(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := newLoginService(t, f, nil)
	var codes []int
	for i := range 7 {
		codes = append(codes, do(s.handler, loginRequest("192.0.2.1:1", "user"+string(rune('a'+i))+"@example.com")).Code)
	}
	require.Equal(t, []int{204, 204, 204, 204, 204, 429, 429}, codes)
}

// A body the handler refuses still cost the client its network quota, as
// the middleware counted it first.
func TestGuardBadIdentityCountedByMiddleware(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := newLoginService(t, f, nil)
	w := do(s.handler, loginRequest("192.0.2.1:1", "ali\u200bce"))
	require.Equal(t, http.StatusBadRequest, w.Code)
	require.Equal(t, `"auth.login/network";r=99;t=60`, w.Header().Get("RateLimit"))
}

func TestGuardFailsClosed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := newLoginService(t, f, &fakeLimiter{err: errors.New("database unreachable")})
	w := do(s.handler, loginRequest("192.0.2.1:1", "alice@example.com"))
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.Empty(t, s.admitted)
	require.Equal(t, "Service Unavailable\n", w.Body.String())
	require.Empty(t, w.Header().Values("Retry-After"))
	// What the middleware consumed is still reported.
	require.Equal(t, `"auth.login/network";r=99;t=60`, w.Header().Get("RateLimit"))
}

func TestGuardSubjectCount(t *testing.T) {
	t.Parallel()
	f := setup(t)
	g, err := httplimit.NewGuard(httplimit.Config{Limiter: f.limiter, Hasher: f.hasher, Limits: []httplimit.Limit{limitOf(loginClient), limitOf(loginIdentity)}})
	require.NoError(t, err)
	for _, subjects := range [][][]byte{nil, {[]byte("a")}, {[]byte("a"), []byte("b"), []byte("c")}} {
		w := newRecorder()
		_, ok := g.Admit(w, request("POST", "/", "192.0.2.1:1", ""), subjects...)
		require.False(t, ok)
		require.Equal(t, http.StatusServiceUnavailable, w.Code)
	}
	w := newRecorder()
	res, ok := g.Admit(w, request("POST", "/", "192.0.2.1:1", ""), []byte("a"), []byte("b"))
	require.True(t, ok)
	require.Equal(t, domain.Allowed, res.Outcome())
	_, ok = res.Outer()
	require.False(t, ok, "no middleware around")
	require.True(t, strings.HasPrefix(w.Header().Get("RateLimit"), `"auth.login/identity";r=1;t=60`))
}

// Two Guards in one handler: passing the first one's result on with
// NewContext makes the second report every limit checked so far, instead
// of replacing the first one's fields.
func TestGuardsChainThroughNewContext(t *testing.T) {
	t.Parallel()
	f := setup(t)
	m := f.middleware(t, httplimit.RemoteNetwork, limitOf(loginNetwork))
	newGuard := func(p domain.Policy) *httplimit.Guard {
		g, err := httplimit.NewGuard(httplimit.Config{Limiter: f.limiter, Hasher: f.hasher, Limits: []httplimit.Limit{limitOf(p)}})
		require.NoError(t, err)
		return g
	}
	client, identity := newGuard(loginClient), newGuard(loginIdentity)
	var second httplimit.Result
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, ok := client.Admit(w, r, []byte("client"))
		if !ok {
			return
		}
		r = r.WithContext(httplimit.NewContext(r.Context(), res))
		if second, ok = identity.Admit(w, r, []byte("alice")); !ok {
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	w := do(h, request("POST", "/login", "192.0.2.1:1", ""))
	require.Equal(t, http.StatusNoContent, w.Code)
	require.Equal(t, `"auth.login/identity";r=1;t=60, "auth.login/client";r=4;t=60, "auth.login/network";r=99;t=60`, w.Header().Get("RateLimit"))
	outer, ok := second.Outer()
	require.True(t, ok)
	require.Equal(t, "auth.login/client", outer.Name(0), "the second guard's result chains the first one's")
	outermost, ok := outer.Outer()
	require.True(t, ok)
	require.Equal(t, "auth.login/network", outermost.Name(0))
}

// A RejectFunc learns which limit denied, by name and policy.
func TestRejectionNamesTheDenyingLimit(t *testing.T) {
	t.Parallel()
	f := setup(t)
	type seen struct {
		index  int
		name   string
		policy domain.Policy
	}
	var got []seen
	g, err := httplimit.NewGuard(httplimit.Config{
		Limiter: f.limiter, Hasher: f.hasher,
		Limits: []httplimit.Limit{limitOf(loginClient), limitOf(loginIdentity)},
		Reject: func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
			i, _, ok := rej.Denied()
			require.True(t, ok)
			name, p, ok := rej.Limit(i)
			require.True(t, ok)
			_, _, ok = rej.Limit(2)
			require.False(t, ok, "out of range")
			got = append(got, seen{i, name, p})
			httplimit.DefaultReject(w, r, rej)
		},
	})
	require.NoError(t, err)
	for range 3 {
		w := newRecorder()
		g.Admit(w, request("POST", "/", "192.0.2.1:1", ""), []byte("client"), []byte("alice"))
	}
	require.Len(t, got, 1, "the identity allows two, the third is denied")
	require.Equal(t, 1, got[0].index)
	require.Equal(t, "auth.login/identity", got[0].name)
	require.True(t, got[0].policy.Equal(loginIdentity))
}
