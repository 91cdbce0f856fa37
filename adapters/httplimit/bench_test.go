package httplimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
)

// benchClients is how many client addresses the benchmarks cycle through,
// so that requests hit many counters, as a service's do.
const benchClients = 1024

// benchRequests returns one GET request per client address.
func benchRequests() []*http.Request {
	reqs := make([]*http.Request, benchClients)
	for i := range reqs {
		r := httptest.NewRequest("GET", "/items/1", nil)
		r.RemoteAddr = fmt.Sprintf("10.%d.%d.1:40000", i/256, i%256)
		reqs[i] = r
	}
	return reqs
}

var emptyHandler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})

// BenchmarkMiddleware measures the admitted path over httptest: the
// middleware with one client-network limit on a memory store, around an
// empty handler, against the empty handler alone.
func BenchmarkMiddleware(b *testing.B) {
	reqs := benchRequests()
	b.Run("handler=empty", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			emptyHandler.ServeHTTP(httptest.NewRecorder(), reqs[i%benchClients])
		}
	})
	b.Run("handler=runlimit", func(b *testing.B) {
		f := setupStore(b, memory.Config{MaxKeys: 4 * benchClients, Shards: 16})
		policy := domain.MustPolicy("bench.http", "client", domain.MaxLimit, time.Hour)
		h := f.middleware(b, httplimit.RemoteNetwork, httplimit.Limit{Policy: policy}).Handler(emptyHandler)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, reqs[i%benchClients])
			if w.Code != http.StatusOK {
				b.Fatalf("status %d", w.Code)
			}
		}
		st, err := f.store.Stats(context.Background())
		require.NoError(b, err)
		require.Equal(b, int64(min(b.N, benchClients)), st.Entries, "one counter per client")
	})
}
