package login_test

import (
	"net/http"
	"net/netip"
	"net/url"
	"testing"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/examples/loginservice/login"
)

// forged posts a wrong password for identity from addr with the given
// forwarding header.
func (s *service) forged(addr, identity string, header http.Header) reply {
	s.t.Helper()
	s.note(identity, "guess")
	for _, vs := range header {
		s.note(vs...)
	}
	form := url.Values{"identity": {identity}, "password": {"guess"}}.Encode()
	return s.post(addr, "application/x-www-form-urlencoded", form, header)
}

// TestForgedForwardingHeaderIgnored: with no trusted proxy (the default),
// X-Forwarded-For and Forwarded are never read: four attempts from one
// peer naming four different clients all count against the peer, whose
// network limit goes 9, 8, 7, 6.
func TestForgedForwardingHeaderIgnored(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b)
			s.expect(s.forged("127.0.0.2", "u1@example.com", http.Header{"X-Forwarded-For": {"198.51.100.1"}}), want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
				policy:    qAll,
			})
			s.expect(s.forged("127.0.0.2", "u2@example.com", http.Header{"X-Forwarded-For": {"198.51.100.2"}}), want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(0, 60), client(4, 60), network(8, 60)),
				policy:    qAll,
			})
			s.expect(s.forged("127.0.0.2", "u3@example.com", http.Header{"X-Forwarded-For": {"203.0.113.5, 198.51.100.3"}}), want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(0, 60), client(3, 60), network(7, 60)),
				policy:    qAll,
			})
			s.expect(s.forged("127.0.0.2", "u4@example.com", http.Header{"Forwarded": {"for=198.51.100.4"}}), want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(0, 60), client(2, 60), network(6, 60)),
				policy:    qAll,
			})
		})
	}
}

// TestForwardingHeaderFromTrustedProxy: when the peer is a trusted proxy,
// the client is the rightmost address of X-Forwarded-For that is not a
// trusted proxy: two clients get a quota each, and an address a client
// wrote left of its own is ignored. The same header from a peer that is
// not trusted is not read: that peer is counted by its own address.
func TestForwardingHeaderFromTrustedProxy(t *testing.T) {
	t.Parallel()
	trustProxy := func(c *login.Config) {
		c.Clients = httplimit.ClientConfig{
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
			Header:         httplimit.XForwardedForHeader,
		}
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b, trustProxy)
			fresh := want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
				policy:    qAll,
			}
			second := want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(0, 60), client(4, 60), network(8, 60)),
				policy:    qAll,
			}
			s.expect(s.forged("127.0.0.1", "u1@example.com", http.Header{"X-Forwarded-For": {"198.51.100.1"}}), fresh)
			s.expect(s.forged("127.0.0.1", "u2@example.com", http.Header{"X-Forwarded-For": {"198.51.100.2"}}), fresh)
			// 198.51.100.1 again, behind an address it wrote itself.
			s.expect(s.forged("127.0.0.1", "u3@example.com", http.Header{"X-Forwarded-For": {"203.0.113.9, 198.51.100.1"}}), second)
			// 127.0.0.2 is no trusted proxy: its header names 198.51.100.1,
			// whose third attempt this would be, but it counts as itself.
			s.expect(s.forged("127.0.0.2", "u4@example.com", http.Header{"X-Forwarded-For": {"198.51.100.1"}}), fresh)
			s.expect(s.forged("127.0.0.2", "u5@example.com", http.Header{"X-Forwarded-For": {"198.51.100.2"}}), second)
		})
	}
}
