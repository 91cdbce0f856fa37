package login_test

import (
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/examples/loginservice/login"
)

// pipeListener accepts real TCP connections but reports their peer as a
// pipe, as a listener on a Unix socket or an in-memory transport would:
// net/http then sets a RemoteAddr that names no IP address.
type pipeListener struct{ net.Listener }

func (l pipeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return pipeConn{c}, nil
}

type pipeConn struct{ net.Conn }

func (pipeConn) RemoteAddr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// TestKeyFunctionFails: a request whose client cannot be found is refused
// with 503 by the middleware, before the body is read and before any
// store is asked: the fields name the middleware's policy but know no
// state, and there is no Retry-After. The readiness probe, which needs no
// client, still answers.
func TestKeyFunctionFails(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			clock := memory.NewManualClock()
			s := startOn(t, b.config(t, clock), pipeListener{listen(t)}, clock, b.exact)
			s.expect(s.login("127.0.0.2", login.DemoIdentity, login.DemoPassword), want{
				status: 503,
				body:   unavailableBody,
				policy: qNetwork,
			})
			s.expect(s.get("127.0.0.2", "/healthz"), want{status: 200, body: readyBody})
			records := s.logs.records("login: request refused")
			require.Len(t, records, 1)
			require.Contains(t, records[0], `"level":"ERROR"`)
			require.Contains(t, records[0], `"reason":"key"`)
			require.Contains(t, records[0], httplimit.ErrRemoteAddr.Error())
		})
	}
}

// TestForwardingHeaderGarbled: behind a trusted proxy, a forwarding
// header whose rightmost entries (the ones the proxies wrote) do not name
// an address is refused with 503 rather than counted against the proxy;
// garbage a client wrote left of the first untrusted address is never
// read.
func TestForwardingHeaderGarbled(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b, trustLoopback)
			s.note("198.51.100.7")
			for _, xff := range []string{"unknown", "198.51.100.7, not-an-address", "198.51.100.7, [2001:db8::1"} {
				s.expect(s.post("127.0.0.2", "application/x-www-form-urlencoded", "identity=a%40example.com&password=p",
					http.Header{"X-Forwarded-For": {xff}}), want{status: 503, body: unavailableBody, policy: qNetwork})
			}
			s.note(login.DemoIdentity, login.DemoPassword)
			s.expect(s.post("127.0.0.2", "application/x-www-form-urlencoded", "identity=alice%40example.com&password="+login.DemoPassword,
				http.Header{"X-Forwarded-For": {"not-an-address, 198.51.100.7"}}), want{
				status:    200,
				body:      okBody,
				rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
				policy:    qAll,
			})
			require.Len(t, s.logs.records("login: request refused"), 3)
		})
	}
}

// trustLoopback trusts every loopback address as a proxy that writes
// X-Forwarded-For.
func trustLoopback(c *login.Config) {
	c.Clients = httplimit.ClientConfig{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Header:         httplimit.XForwardedForHeader,
	}
}
