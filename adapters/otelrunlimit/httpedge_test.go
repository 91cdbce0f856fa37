package otelrunlimit_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// TestHTTPEdgeTelemetryNamesNoClient: a login route behind httplimit's
// middleware (per client network) and Guard (per identity), over a
// limiter observed by metrics and spans, admits, refuses with 429 at
// either limit and with 503 once the store is closed; no metric
// attribute and no span's name, attribute, status or event spells a
// client's address, its network, an identity, a subject or a key.
func TestHTTPEdgeTelemetryNamesNoClient(t *testing.T) {
	t.Parallel()
	f := setup(t, true)
	store, limiter := f.edgeLimiter(t, 100)
	client := domain.MustPolicy("auth.login", "client", 1, time.Minute)
	identity := domain.MustPolicy("auth.login", "identity", 1, time.Minute)
	m, err := httplimit.NewMiddleware(httplimit.Config{Limiter: limiter, Hasher: f.hasher,
		Limits: []httplimit.Limit{{Policy: client}}, Key: httplimit.RemoteNetwork})
	require.NoError(t, err)
	guard, err := httplimit.NewGuard(httplimit.Config{Limiter: limiter, Hasher: f.hasher,
		Limits: []httplimit.Limit{{Policy: identity, Private: true}}})
	require.NoError(t, err)
	var subjects [][]byte
	login := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := httplimit.AppendIdentity(nil, r.PostFormValue("email"))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		subjects = append(subjects, id)
		if _, ok := guard.Admit(w, r, id); ok {
			w.WriteHeader(http.StatusNoContent)
		}
	}))

	emails := []string{"Alice@Example.test", "bob@example.test", "carol@example.test"}
	addrs := []string{"198.51.100.7:4321", "[2001:db8:77:1::5]:443", "203.0.113.9:80"}
	post := func(addr, email string) int {
		r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"email": {email}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = addr
		sub, err := httplimit.RemoteNetwork(nil, r)
		require.NoError(t, err)
		subjects = append(subjects, sub)
		w := httptest.NewRecorder()
		login.ServeHTTP(w, r)
		return w.Code
	}
	require.Equal(t, http.StatusNoContent, post(addrs[0], emails[0]))
	require.Equal(t, http.StatusTooManyRequests, post(addrs[0], emails[1]), "the client's limit")
	require.Equal(t, http.StatusTooManyRequests, post(addrs[1], emails[0]), "the identity's limit")
	require.NoError(t, store.Close())
	require.Equal(t, http.StatusServiceUnavailable, post(addrs[2], emails[2]), "the store is closed")

	secrets := [][]byte{[]byte(testSecret), []byte("2001:db8:77:1"), []byte("alice@example.test")}
	for _, e := range emails {
		secrets = append(secrets, []byte(e))
	}
	for _, a := range addrs {
		secrets = append(secrets, []byte(strings.Trim(a[:strings.LastIndexByte(a, ':')], "[]")))
	}
	for _, sub := range subjects {
		secrets = append(secrets, sub)
		for _, p := range []domain.Policy{client, identity} {
			sk := f.hasher.Key(p, sub).Bytes()
			secrets = append(secrets, sk[:])
		}
	}

	snap := f.collect(t)
	texts := append([]string{}, snap.attrValues...)
	outcomes := map[string]bool{}
	for _, s := range f.spans.Ended() {
		texts = append(texts, s.Name(), s.Status().Description)
		for _, kv := range s.Attributes() {
			texts = append(texts, string(kv.Key), kv.Value.String())
			if kv.Key == otelrunlimit.AttrOutcome {
				outcomes[kv.Value.AsString()] = true
			}
		}
		for _, ev := range s.Events() {
			texts = append(texts, ev.Name)
			for _, kv := range ev.Attributes {
				texts = append(texts, string(kv.Key), kv.Value.String())
			}
		}
	}
	require.Equal(t, map[string]bool{"allowed": true, "quota_denied": true, "failed": true}, outcomes,
		"every path was observed")
	all := strings.Join(texts, "\n")
	for _, s := range secrets {
		for _, r := range leakcheck.Renderings(s) {
			require.NotContains(t, all, r, "the telemetry spells a client, an identity or a key")
		}
	}
}
