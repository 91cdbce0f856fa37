package httplimit_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// writerTraits describes the ResponseWriter a handler got: its type, the
// optional interfaces it has and what http.ResponseController can do
// through it.
func writerTraits(w http.ResponseWriter) string {
	_, flusher := w.(http.Flusher)
	_, hijacker := w.(http.Hijacker)
	_, pusher := w.(http.Pusher)
	_, readerFrom := w.(io.ReaderFrom)
	rc := http.NewResponseController(w)
	return fmt.Sprintf("%T flusher=%t hijacker=%t pusher=%t readerFrom=%t deadline=%v fullDuplex=%v",
		w, flusher, hijacker, pusher, readerFrom, rc.SetWriteDeadline(time.Now().Add(time.Minute)), rc.EnableFullDuplex())
}

// TestRealServerWriterReachesHandler: an admitted request reaches the
// handler with the server's own ResponseWriter, over HTTP/1.1, HTTP/2
// over TLS and unencrypted HTTP/2, so that a handler can still flush,
// hijack, push, use sendfile through io.ReaderFrom and set deadlines
// through http.ResponseController. A wrapper for admitted requests would
// hide what it does not forward.
func TestRealServerWriterReachesHandler(t *testing.T) {
	t.Parallel()
	f := setup(t)
	m := f.middleware(t, httplimit.RemoteNetwork, limitOf(domain.MustPolicy("api", "client", 100, time.Minute)))
	traits := make(chan string, 1)
	bare := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { traits <- writerTraits(w) })
	for _, tc := range []struct {
		name  string
		start func(*httptest.Server) *http.Client
	}{
		{"HTTP/1.1", func(s *httptest.Server) *http.Client { s.Start(); return s.Client() }},
		{"HTTP/2 over TLS", func(s *httptest.Server) *http.Client {
			s.EnableHTTP2 = true
			s.StartTLS()
			return s.Client()
		}},
		{"unencrypted HTTP/2", func(s *httptest.Server) *http.Client {
			s.Config.Protocols = new(http.Protocols)
			s.Config.Protocols.SetUnencryptedHTTP2(true)
			s.Start()
			tr := &http.Transport{Protocols: new(http.Protocols)}
			tr.Protocols.SetUnencryptedHTTP2(true)
			t.Cleanup(tr.CloseIdleConnections)
			return &http.Client{Transport: tr}
		}},
	} {
		served := func(h http.Handler) (string, *http.Response) {
			s := httptest.NewUnstartedServer(h)
			defer s.Close()
			resp, err := tc.start(s).Get(s.URL)
			require.NoError(t, err, tc.name)
			_ = resp.Body.Close()
			return <-traits, resp
		}
		want, _ := served(bare)
		got, resp := served(m.Handler(bare))
		require.Equal(t, want, got, tc.name)
		require.Equal(t, `"api/client";q=100;w=60`, resp.Header.Get(httplimit.HeaderRateLimitPolicy), tc.name)
	}
}

// TestRealServerExpectContinue: a client that sends Expect: 100-continue
// waits for 100 Continue before it sends the body. The check comes first:
// an admitted request gets 100 Continue when the handler reads the body;
// a refused one gets its 429 at once, with no 100 Continue, and its body
// is never asked for.
func TestRealServerExpectContinue(t *testing.T) {
	t.Parallel()
	f := setup(t)
	m := f.middleware(t, httplimit.RemoteNetwork, limitOf(domain.MustPolicy("upload", "client", 1, time.Minute)))
	next := &recorder{}
	s := httptest.NewServer(m.Handler(next))
	defer s.Close()

	send := func() (*bufio.Reader, net.Conn) {
		conn, err := net.Dial("tcp", s.Listener.Addr().String())
		require.NoError(t, err)
		_, err = io.WriteString(conn, "PUT /file HTTP/1.1\r\nHost: upload.test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
		require.NoError(t, err)
		return bufio.NewReader(conn), conn
	}

	br, conn := send()
	defer conn.Close()
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusContinue, resp.StatusCode, "admitted: the handler asks for the body")
	_, err = io.WriteString(conn, "hello")
	require.NoError(t, err)
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_ = resp.Body.Close()
	require.Equal(t, "hello", next.body)

	br, conn = send()
	defer conn.Close()
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "refused before 100 Continue")
	require.Equal(t, "60", resp.Header.Get(httplimit.HeaderRetryAfter))
	_ = resp.Body.Close()
	require.Equal(t, 1, next.calls)
}

// blockingLimiter holds every check until its context ends, then hands it
// to the limiter behind it. A context that never ends (a middleware that
// detached the check from the request) is let through after a while, so
// that the test fails on what the check did rather than hanging.
type blockingLimiter struct {
	ports.Limiter
	entered chan struct{}
}

func (l *blockingLimiter) Check(ctx context.Context, c domain.Check) (domain.Decision, error) {
	l.entered <- struct{}{}
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
	return l.Limiter.Check(ctx, c)
}

// TestRealServerClientGoneDuringCheck: a client that closes its
// connection while its request is checked cancels the request's context.
// The check fails with that cancellation, which consumed nothing and says
// so; the request is refused as a failure and never reaches the handler,
// and the quota is whole for the next request.
func TestRealServerClientGoneDuringCheck(t *testing.T) {
	t.Parallel()
	f := setup(t)
	p := domain.MustPolicy("api", "client", 1, time.Minute)
	blocking := &blockingLimiter{Limiter: f.limiter, entered: make(chan struct{}, 1)}
	errs := make(chan error, 1)
	cfg := httplimit.Config{Limiter: blocking, Hasher: f.hasher, Limits: []httplimit.Limit{limitOf(p)}, Key: httplimit.RemoteNetwork,
		Reject: func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
			errs <- rej.Err
			httplimit.DefaultReject(w, r, rej)
		}}
	m, err := httplimit.NewMiddleware(cfg)
	require.NoError(t, err)
	// The handler reports that it was reached where a refusal reports its
	// error, so that the test fails rather than waits.
	s := httptest.NewServer(m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		errs <- errors.New("the handler was reached")
	})))
	defer s.Close()

	conn, err := net.Dial("tcp", s.Listener.Addr().String())
	require.NoError(t, err)
	_, err = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n")
	require.NoError(t, err)
	<-blocking.entered
	require.NoError(t, conn.Close())
	err = <-errs
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ports.MayHaveConsumedQuota(err))

	next := &recorder{}

	m2 := f.middleware(t, httplimit.RemoteNetwork, limitOf(p))
	w := do(m2.Handler(next), request("GET", "/", "127.0.0.1:1", ""))
	require.Equal(t, http.StatusOK, w.Code, "the cancelled check consumed nothing")
	require.Equal(t, `"api/client";r=0;t=60`, w.Header().Get(httplimit.HeaderRateLimit))
}
