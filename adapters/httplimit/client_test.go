package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// request builds a request from remote with an optional body.
func request(method, target, remote, body string) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.RemoteAddr = remote
	return r
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func clientNetwork(t testing.TB, cfg httplimit.ClientConfig) *httplimit.ClientNetwork {
	t.Helper()
	c, err := httplimit.NewClientNetwork(cfg)
	require.NoError(t, err)
	return c
}

// subjectOf returns the subject key function appends for r.
func subjectOf(t testing.TB, key httplimit.KeyFunc, r *http.Request) string {
	t.Helper()
	b, err := key([]byte("p:"), r)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), "p:"), "appends to dst")
	return string(b[2:])
}

func TestRemoteNetwork(t *testing.T) {
	t.Parallel()
	for remote, want := range map[string]string{
		"192.0.2.4:1234":                 "192.0.2.4/32",
		"[2001:db8:1:2:3:4:5:6]:443":     "2001:db8:1:2::/64",
		"[2001:db8:1:2::ffff]:443":       "2001:db8:1:2::/64",
		"[::ffff:192.0.2.4]:80":          "192.0.2.4/32", // IPv4-mapped is IPv4
		"[fe80::1%eth0]:80":              "fe80::/64",    // zone dropped
		"[::1]:1":                        "::/64",
		"127.0.0.1:65535":                "127.0.0.1/32",
		"[2001:db8:ffff:ffff::1%25x]:80": "2001:db8:ffff:ffff::/64",
	} {
		r := request("GET", "/", remote, "")
		require.Equal(t, want, subjectOf(t, httplimit.RemoteNetwork, r), remote)
	}
}

// A RemoteAddr that is not an address and port fails closed, and the error
// does not quote it.
func TestRemoteNetworkMalformed(t *testing.T) {
	t.Parallel()
	for _, remote := range []string{"", "192.0.2.4", "@", "/tmp/sock", "example.com:80", "[::1]", "192.0.2.4:99999", "192.0.2.4:x", "999.0.2.4:80", " 192.0.2.4:80"} {
		r := request("GET", "/", remote, "")
		out, err := httplimit.RemoteNetwork([]byte("p:"), r)
		require.ErrorIs(t, err, httplimit.ErrRemoteAddr, "%q", remote)
		require.Equal(t, "p:", string(out))
		if len(remote) >= 8 {
			// Shorter strings turn up in any printing by chance.
			leakcheck.Check(t, "remote address error", err, []byte(remote))
		}
	}
}

func TestClientNetworkPrefixes(t *testing.T) {
	t.Parallel()
	c := clientNetwork(t, httplimit.ClientConfig{IPv4Prefix: 24, IPv6Prefix: 48})
	for remote, want := range map[string]string{
		"192.0.2.200:1":          "192.0.2.0/24",
		"[::ffff:192.0.2.200]:1": "192.0.2.0/24",
		"[2001:db8:aa:bb::1]:1":  "2001:db8:aa::/48",
	} {
		require.Equal(t, want, subjectOf(t, c.AppendSubject, request("GET", "/", remote, "")), remote)
	}
	full := clientNetwork(t, httplimit.ClientConfig{IPv6Prefix: 128})
	require.Equal(t, "2001:db8::1/128", subjectOf(t, full.AppendSubject, request("GET", "/", "[2001:db8::1]:1", "")))
}

// Addresses that carry their client's IPv4 address count as that address:
// many IPv4 clients behind one translator do not share a /64, and one
// IPv4 client cannot spread over the 65,536 /64s of its 6to4 prefix.
func TestEmbeddedIPv4Clients(t *testing.T) {
	t.Parallel()
	for remote, want := range map[string]string{
		// NAT64, the well-known prefix: the last 32 bits.
		"[64:ff9b::192.0.2.33]:1":     "192.0.2.33/32",
		"[64:ff9b::c000:221%eth0]:1":  "192.0.2.33/32",
		"[64:ff9b::198.51.100.9]:443": "198.51.100.9/32",
		// 6to4: bits 16 to 47, whatever the subnet and host.
		"[2002:c000:221::1]:1":           "192.0.2.33/32",
		"[2002:c000:221:ffff:1:2:3:4]:1": "192.0.2.33/32",
		"[2002:c633:6409:1::abcd]:1":     "198.51.100.9/32",
		// Teredo: the client's address, inverted, in the last 32 bits
		// (RFC 4380's example, client 192.0.2.45 behind server
		// 65.54.227.120).
		"[2001:0:4136:e378:8000:63bf:3fff:fdd2]:1": "192.0.2.45/32",
		// Neighbours of those networks stay IPv6 /64s.
		"[64:ff9b:0:0:1::c000:221]:1": "64:ff9b::/64",
		"[2001:1::c000:221]:1":        "2001:1::/64",
		"[2003:c000:221::1]:1":        "2003:c000:221::/64",
	} {
		r := request("GET", "/", remote, "")
		require.Equal(t, want, subjectOf(t, httplimit.RemoteNetwork, r), remote)
	}

	// A translator's own /96, with a coarser IPv4 prefix.
	c := clientNetwork(t, httplimit.ClientConfig{IPv4Prefix: 24, NAT64Prefixes: prefixes("2001:db8:64:ff::/96")})
	for remote, want := range map[string]string{
		"[2001:db8:64:ff::c633:6409]:1": "198.51.100.0/24",
		"[2001:db8:64:ff::1]:1":         "0.0.0.0/24",
		"[64:ff9b::c633:6409]:1":        "198.51.100.0/24",
		"[2001:db8:64:fe::c633:6409]:1": "2001:db8:64:fe::/64",
		"198.51.100.77:1":               "198.51.100.0/24",
	} {
		require.Equal(t, want, subjectOf(t, c.AppendSubject, request("GET", "/", remote, "")), remote)
	}
	// Without it, that translator's clients share its /64.
	require.Equal(t, "2001:db8:64:ff::/64", subjectOf(t, httplimit.RemoteNetwork, request("GET", "/", "[2001:db8:64:ff::c633:6409]:1", "")))

	// Through a trusted proxy, the named client is counted the same way.
	behind := clientNetwork(t, httplimit.ClientConfig{TrustedProxies: prefixes("10.0.0.0/8"), Header: httplimit.XForwardedForHeader})
	r := request("GET", "/", "10.1.2.3:1", "")
	r.Header.Set("X-Forwarded-For", "2002:c000:221:7::9")
	require.Equal(t, "192.0.2.33/32", subjectOf(t, behind.AppendSubject, r))
}

func TestClientConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   httplimit.ClientConfig
		field string
	}{
		{httplimit.ClientConfig{IPv4Prefix: 33}, "IPv4Prefix"},
		{httplimit.ClientConfig{IPv4Prefix: -1}, "IPv4Prefix"},
		{httplimit.ClientConfig{IPv6Prefix: 129}, "IPv6Prefix"},
		{httplimit.ClientConfig{IPv6Prefix: -1}, "IPv6Prefix"},
		{httplimit.ClientConfig{MaxHops: 65}, "MaxHops"},
		{httplimit.ClientConfig{MaxHops: -1}, "MaxHops"},
		{httplimit.ClientConfig{TrustedProxies: prefixes("10.0.0.0/8")}, "Header"},
		{httplimit.ClientConfig{Header: httplimit.XForwardedForHeader}, "TrustedProxies"},
		{httplimit.ClientConfig{Header: 9, TrustedProxies: prefixes("10.0.0.0/8")}, "Header"},
		{httplimit.ClientConfig{Header: httplimit.ForwardedHeader, TrustedProxies: []netip.Prefix{{}}}, "TrustedProxies[0]"},
		{httplimit.ClientConfig{Header: httplimit.ForwardedHeader, TrustedProxies: prefixes("10.0.0.0/8", "::ffff:10.0.0.0/104")}, "TrustedProxies[1]"},
		// Trusting every address trusts every client, whose own entries
		// are then walked past up to the leftmost, which it chose: one
		// X-Forwarded-For per request would buy a fresh quota each time.
		{httplimit.ClientConfig{Header: httplimit.XForwardedForHeader, TrustedProxies: prefixes("0.0.0.0/0")}, "TrustedProxies[0]"},
		{httplimit.ClientConfig{Header: httplimit.ForwardedHeader, TrustedProxies: prefixes("10.0.0.0/8", "::/0")}, "TrustedProxies[1]"},
		{httplimit.ClientConfig{Header: httplimit.XForwardedForHeader, TrustedProxies: prefixes("192.0.2.7/0")}, "TrustedProxies[0]"},
		{httplimit.ClientConfig{NAT64Prefixes: prefixes("2001:db8:64::/64")}, "NAT64Prefixes[0]"},
		{httplimit.ClientConfig{NAT64Prefixes: prefixes("64:ff9b::/96", "192.0.2.0/24")}, "NAT64Prefixes[1]"},
		{httplimit.ClientConfig{NAT64Prefixes: prefixes("::ffff:0:0/96")}, "NAT64Prefixes[0]"},
		{httplimit.ClientConfig{NAT64Prefixes: []netip.Prefix{{}}}, "NAT64Prefixes[0]"},
	} {
		_, err := httplimit.NewClientNetwork(tc.cfg)
		var ce *httplimit.ConfigError
		require.ErrorAs(t, err, &ce, "%+v", tc.cfg)
		require.Equal(t, tc.field, ce.Field)
		require.ErrorIs(t, err, httplimit.ErrInvalidConfig)
	}
}

func TestForwardingHeaderString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Forwarded", httplimit.ForwardedHeader.String())
	require.Equal(t, "X-Forwarded-For", httplimit.XForwardedForHeader.String())
	require.Equal(t, "none", httplimit.NoForwardingHeader.String())
	require.Equal(t, "ForwardingHeader(7)", httplimit.ForwardingHeader(7).String())
}
