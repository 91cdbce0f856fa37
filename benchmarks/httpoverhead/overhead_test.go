package httpoverhead

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	gohttplimit "github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// clients is how many client addresses the requests cycle through, so that
// both limiters keep many counters, as a service does.
const clients = 1024

func requests() []*http.Request {
	reqs := make([]*http.Request, clients)
	for i := range reqs {
		r := httptest.NewRequest("GET", "/items/1", nil)
		r.RemoteAddr = fmt.Sprintf("10.%d.%d.1:40000", i/256, i%256)
		reqs[i] = r
	}
	return reqs
}

var empty = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})

// serve runs the benchmark loop: one fresh recorder per request, as a
// server gives each request a fresh response, and every response must be
// an admission.
func serve(b *testing.B, h http.Handler, reqs []*http.Request) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, reqs[i%clients])
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkOverhead compares the admitted path of the two middleware with
// limits no request reaches, each on its process-local store.
func BenchmarkOverhead(b *testing.B) {
	reqs := requests()
	b.Run("mw=none", func(b *testing.B) { serve(b, empty, reqs) })

	b.Run("mw=runlimit", func(b *testing.B) {
		store, err := memory.New(memory.Config{MaxKeys: 4 * clients, Shards: 16})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		limiter, err := app.NewLimiter(store, app.LimiterConfig{})
		if err != nil {
			b.Fatal(err)
		}
		hasher, err := domain.NewKeyHasher([]byte("benchmark-secret-of-at-least-32-bytes"))
		if err != nil {
			b.Fatal(err)
		}
		m, err := httplimit.NewMiddleware(httplimit.Config{
			Limiter: limiter,
			Hasher:  hasher,
			Limits:  []httplimit.Limit{{Policy: domain.MustPolicy("bench.http", "client", domain.MaxLimit, time.Hour)}},
			Key:     httplimit.RemoteNetwork,
		})
		if err != nil {
			b.Fatal(err)
		}
		serve(b, m.Handler(empty), reqs)
		st, err := store.Stats(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if want := int64(min(b.N, clients)); st.Entries != want {
			b.Fatalf("%d counters, want one per client (%d)", st.Entries, want)
		}
	})

	b.Run("mw=go-limiter", func(b *testing.B) {
		store, err := memorystore.New(&memorystore.Config{Tokens: math.MaxUint64 / 2, Interval: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close(context.Background())
		m, err := gohttplimit.NewMiddleware(store, gohttplimit.IPKeyFunc())
		if err != nil {
			b.Fatal(err)
		}
		serve(b, m.Handle(empty), reqs)
		for i, r := range reqs[:min(b.N, clients)] {
			ip, _, _ := net.SplitHostPort(r.RemoteAddr)
			tokens, remaining, err := store.Get(context.Background(), ip)
			if err != nil || remaining >= tokens {
				b.Fatalf("client %d was not counted", i)
			}
		}
	})
}
