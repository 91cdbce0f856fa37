package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// Behind a reverse proxy in 10.0.0.0/8 that appends to X-Forwarded-For:
// the client is the rightmost address the proxy did not add itself, and a
// request that did not come through the proxy is counted by its peer,
// whatever header it sends.
func ExampleNewClientNetwork() {
	clients, err := httplimit.NewClientNetwork(httplimit.ClientConfig{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Header:         httplimit.XForwardedForHeader,
	})
	if err != nil {
		panic(err)
	}

	store, err := memory.New(memory.Config{MaxKeys: 10_000})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		panic(err)
	}
	hasher, err := domain.NewKeyHasher([]byte("example-only-secret-of-32-bytes!"))
	if err != nil {
		panic(err)
	}
	m, err := httplimit.NewMiddleware(httplimit.Config{
		Limiter: limiter, Hasher: hasher, Key: clients.AppendSubject,
		Limits: []httplimit.Limit{{Policy: domain.MustPolicy("api", "client", 100, time.Minute)}},
	})
	if err != nil {
		panic(err)
	}
	handler := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	for _, req := range []struct{ peer, forwardedFor string }{
		{"10.1.2.3:443", "198.51.100.7, 203.0.113.9"}, // the client wrote 198.51.100.7 itself
		{"203.0.113.50:50000", "198.51.100.7"},        // not through the proxy
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = req.peer
		r.Header.Set("X-Forwarded-For", req.forwardedFor)
		client, err := clients.Addr(r)
		if err != nil {
			panic(err)
		}
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		fmt.Println(client, w.Code)
	}
	// Output:
	// 203.0.113.9 200
	// 203.0.113.50 200
}
