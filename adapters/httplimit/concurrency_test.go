package httplimit_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/domain"
)

// Concurrent requests from one client are admitted exactly up to the
// limit, and every admitted one carries its own result and fields.
func TestMiddlewareConcurrent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	policy := domain.MustPolicy("test.http", "concurrent", 50, time.Minute)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, ok := httplimit.FromContext(r.Context())
		if !ok || res.Outcome() != domain.Allowed {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	h := f.middleware(t, httplimit.RemoteNetwork, httplimit.Limit{Policy: policy}).Handler(next)
	const workers, each = 8, 20
	codes := make(chan int, workers*each)
	fields := make(chan string, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				rec := do(h, request("GET", "/", "192.0.2.1:1", ""))
				codes <- rec.Code
				if rec.Code == http.StatusOK {
					fields <- rec.Header().Get("RateLimit")
				}
			}
		}()
	}
	wg.Wait()
	close(codes)
	close(fields)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	require.Equal(t, map[int]int{200: 50, 429: workers*each - 50}, count)
	seen := map[string]bool{}
	for v := range fields {
		require.False(t, seen[v], "two admitted requests reported %s", v)
		seen[v] = true
	}
	require.Len(t, seen, 50)
}
