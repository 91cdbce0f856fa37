package httplimit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

const (
	leakClient   = "203.0.113.77"
	leakIdentity = "Jx0w9vq@zt4kqv.xq" // no window of it is a word Go prints
)

// secretsOf returns the subjects of the login flow and every key derived
// from them.
func secretsOf(t *testing.T, h domain.KeyHasher) [][]byte {
	t.Helper()
	secrets := [][]byte{[]byte(leakClient), []byte(leakClient + "/32"), []byte(leakIdentity), testSecret}
	for _, p := range []domain.Policy{loginNetwork, loginClient, loginIdentity} {
		for _, s := range []string{leakClient + "/32", leakIdentity} {
			k := h.KeyString(p, s).Bytes()
			secrets = append(secrets, k[:])
		}
	}
	return secrets
}

// requireNoSecret fails when a dump of the response spells a secret.
func requireNoSecret(t *testing.T, w *httptest.ResponseRecorder, secrets [][]byte) {
	t.Helper()
	dump, err := httputil.DumpResponse(w.Result(), true)
	require.NoError(t, err)
	for _, s := range secrets {
		for _, bad := range leakcheck.Renderings(s) {
			require.NotContains(t, string(dump), bad)
		}
	}
}

// No response to any outcome, status, headers or body, holds a subject or
// a key; neither does any value a host can print.
func TestNoSubjectInResponsesOrPrints(t *testing.T) {
	t.Parallel()
	errStore := errors.New("store is down")
	for _, tc := range []struct {
		name   string
		store  memory.Config
		fake   *fakeLimiter
		key    httplimit.KeyFunc
		steps  int
		want   []int
		shadow bool
	}{
		{"allowed, then identity denied", memory.Config{MaxKeys: 64}, nil, nil, 3, []int{204, 204, 429}, false},
		{"storage capacity", memory.Config{MaxKeys: 1}, nil, nil, 1, []int{429}, false},
		{"shadow denied", memory.Config{MaxKeys: 64}, nil, nil, 3, []int{204, 204, 204}, true},
		{"guard error", memory.Config{MaxKeys: 64}, &fakeLimiter{err: errStore}, nil, 1, []int{503}, false},
		{"key error", memory.Config{MaxKeys: 64}, nil, func([]byte, *http.Request) ([]byte, error) {
			return nil, errors.New("tenant missing")
		}, 1, []int{503}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setupStore(t, tc.store)
			secrets := secretsOf(t, f.hasher)
			var printed []any
			var shadowFields string
			check := func(name string, v any) {
				printed = append(printed, v)
				leakcheck.Check(t, name, v, secrets...)
			}
			reject := func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
				check("Rejection", *rej)
				check("Rejection error", rej.Err)
				httplimit.DefaultReject(w, r, rej)
			}
			key := tc.key
			if key == nil {
				key = httplimit.RemoteNetwork
			}
			cfg := f.config(key, limitOf(loginNetwork))
			cfg.Reject = reject
			m, err := httplimit.NewMiddleware(cfg)
			require.NoError(t, err)
			client, identity := loginClient, loginIdentity
			if tc.shadow {
				client, identity = shadowOf(t, client), shadowOf(t, identity)
			}
			gcfg := httplimit.Config{Limiter: f.limiter, Hasher: f.hasher, Limits: []httplimit.Limit{limitOf(client), limitOf(identity)}, Reject: reject}
			if tc.fake != nil {
				gcfg.Limiter = tc.fake
			}
			g, err := httplimit.NewGuard(gcfg)
			require.NoError(t, err)
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				res, _ := httplimit.FromContext(r.Context())
				check("Result", res)
				id, err := httplimit.AppendIdentity(nil, r.PostFormValue("identity"))
				require.NoError(t, err)
				subject, err := httplimit.RemoteNetwork(nil, r)
				require.NoError(t, err)
				gres, ok := g.Admit(w, r, subject, id)
				if ok {
					check("guard Result", gres)
					shadowFields = w.Header().Get("RateLimit")
					w.WriteHeader(http.StatusNoContent)
				}
			}))
			if tc.store.MaxKeys == 1 {
				do(h, loginRequest("198.51.100.1:1", "other@example.test"))
			}
			var codes []int
			for range tc.steps {
				w := do(h, loginRequest(leakClient+":4444", leakIdentity))
				codes = append(codes, w.Code)
				requireNoSecret(t, w, secrets)
				f.clock.Advance(time.Second)
			}
			require.Equal(t, tc.want, codes)
			if tc.shadow {
				require.Contains(t, shadowFields, `"auth.login/identity";r=0;t=`, "the last login was shadow-denied")
			}
			require.NotEmpty(t, printed, "something was printed")
			check("Middleware", m)
			check("Guard", g)
		})
	}
}

func TestErrorsPrintNoSecret(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := httplimit.NewMiddleware(f.config(httplimit.RemoteNetwork, httplimit.Limit{Policy: burst, Name: "top secret\x00name"}))
	require.ErrorIs(t, err, httplimit.ErrInvalidConfig)
	require.NotContains(t, err.Error(), "top secret")
	leakcheck.Check(t, "ConfigError", err, []byte("top secret"))
	c := clientNetwork(t, httplimit.ClientConfig{TrustedProxies: trusted, Header: httplimit.XForwardedForHeader})
	leakcheck.Check(t, "ClientNetwork", c)
	require.True(t, strings.HasPrefix(httplimit.ReasonQuota.String(), "quota"))
}

func shadowOf(t *testing.T, p domain.Policy) domain.Policy {
	t.Helper()
	s, err := p.WithMode(domain.Shadow)
	require.NoError(t, err)
	return s
}
