package login

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// probeResult is one answer of GET /healthz.
type probeResult struct {
	code int
	body string
}

// probeAll sends n concurrent probes to h in the synctest bubble and
// returns once each of them is blocked: in the readiness check, or
// waiting for another probe's.
func probeAll(h http.Handler, n int) <-chan probeResult {
	out := make(chan probeResult, n)
	for range n {
		go func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
			out <- probeResult{w.Code, w.Body.String()}
		}()
	}
	synctest.Wait()
	return out
}

// syncBuffer is a log sink the probes' goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHealthProbesShareOneCheck: GET /healthz is served to anyone on the
// login listener, with no limit in front, and on PostgreSQL each
// readiness check is a transaction of several statements. Probes that
// arrive while a check runs wait for it and share its answer, so that a
// flood of probes holds at most one pool connection and costs the
// database one check at a time, and a failing check is logged once, not
// once per probe. A probe after the check has answered runs a fresh one:
// no answer is reused once it is known.
func TestHealthProbesShareOneCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		code int
		body string
		logs int
	}{
		{"ready", nil, http.StatusOK, bodyReady + "\n", 0},
		{"not ready", errors.New("database is down"), http.StatusServiceUnavailable, bodyNotReady + "\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var calls atomic.Int32
				ready := func(context.Context) error {
					calls.Add(1)
					<-release
					return tc.err
				}
				logs := new(syncBuffer)
				h := newHealthRoute(ready, slog.New(slog.NewTextHandler(logs, nil))).Route.Handler

				const n = 40
				results := probeAll(h, n)
				calledWhileBlocked := calls.Load()
				close(release)
				for range n {
					r := <-results
					require.Equal(t, tc.code, r.code)
					require.Equal(t, tc.body, r.body)
				}
				require.Equal(t, int32(1), calledWhileBlocked, "concurrent probes ran one readiness check each")
				require.Equal(t, tc.logs, strings.Count(logs.String(), "login: not ready"))

				// The answer is not kept: the next probe asks again.
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
				require.Equal(t, tc.code, w.Code)
				require.Equal(t, int32(2), calls.Load())
			})
		})
	}
}

// A probe that gives up while it waits for another's check answers 503
// at once; the check goes on for the probe that started it, whose own
// cancellation does not fail the others.
func TestHealthProbeWaiterGivesUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var calls atomic.Int32
		ready := func(ctx context.Context) error {
			calls.Add(1)
			<-release
			return ctx.Err()
		}
		h := newHealthRoute(ready, slog.New(slog.DiscardHandler)).Route.Handler

		// The first probe starts the check and then gives up; its check
		// still answers the probes waiting for it.
		leaderCtx, cancelLeader := context.WithCancel(context.Background())
		leader := make(chan int, 1)
		go func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil).WithContext(leaderCtx))
			leader <- w.Code
		}()
		synctest.Wait()
		waiterCtx, cancelWaiter := context.WithCancel(context.Background())
		waiter := make(chan int, 1)
		go func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil).WithContext(waiterCtx))
			waiter <- w.Code
		}()
		others := probeAll(h, 3)
		cancelWaiter()
		require.Equal(t, http.StatusServiceUnavailable, <-waiter)
		cancelLeader()
		close(release)
		for range 3 {
			require.Equal(t, http.StatusOK, (<-others).code, "the leader's cancellation failed the probes waiting for it")
		}
		<-leader
		require.Equal(t, int32(1), calls.Load())
	})
}

// A readiness check that panics answers its probes 503 and leaves the
// service up: it runs on a goroutine of its own, outside net/http's
// recovery.
func TestHealthCheckPanicIsNotReady(t *testing.T) {
	t.Parallel()
	logs := new(syncBuffer)
	h := newHealthRoute(func(context.Context) error { panic("store bug") }, slog.New(slog.NewTextHandler(logs, nil))).Route.Handler
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.Equal(t, bodyNotReady+"\n", w.Body.String())
	require.Contains(t, logs.String(), "readiness check panicked (string)")
	require.NotContains(t, logs.String(), "store bug")
}
