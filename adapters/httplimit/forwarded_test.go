package httplimit_test

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// The proxies of these tests: 10.0.0.0/8 and 2001:db8:ffff::/48.
var trusted = prefixes("10.0.0.0/8", "2001:db8:ffff::/48")

func withHeader(remote, name string, lines ...string) *http.Request {
	r := request("GET", "/", remote, "")
	for _, l := range lines {
		r.Header.Add(name, l)
	}
	return r
}

func TestXForwardedFor(t *testing.T) {
	t.Parallel()
	c := clientNetwork(t, httplimit.ClientConfig{TrustedProxies: trusted, Header: httplimit.XForwardedForHeader})
	for _, tc := range []struct {
		name   string
		remote string
		lines  []string
		want   string
	}{
		{"forged header from an untrusted peer is ignored", "198.51.100.7:1", []string{"203.0.113.9"}, "198.51.100.7"},
		{"forged chain from an untrusted peer is ignored", "198.51.100.7:1", []string{"203.0.113.9, 10.0.0.1"}, "198.51.100.7"},
		{"trusted peer names the client", "10.0.0.1:1", []string{"203.0.113.9"}, "203.0.113.9"},
		{"attacker's leftmost entries are skipped", "10.0.0.1:1", []string{"1.1.1.1, 2.2.2.2, 203.0.113.9"}, "203.0.113.9"},
		{"attacker cannot hide behind a trusted-looking entry", "10.0.0.1:1", []string{"10.9.9.9, 203.0.113.9"}, "203.0.113.9"},
		{"trusted hops are walked past", "10.0.0.1:1", []string{"203.0.113.9, 10.0.0.2, 10.0.0.3"}, "203.0.113.9"},
		{"lines joined in order", "10.0.0.1:1", []string{"1.1.1.1, 203.0.113.9", "10.0.0.2"}, "203.0.113.9"},
		{"later line is nearer", "10.0.0.1:1", []string{"10.0.0.2", "203.0.113.9"}, "203.0.113.9"},
		{"all trusted: leftmost", "10.0.0.1:1", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
		{"no header: the proxy itself", "10.0.0.1:1", nil, "10.0.0.1"},
		{"empty elements skipped", "10.0.0.1:1", []string{" , 203.0.113.9 ,, ", ""}, "203.0.113.9"},
		{"ipv6 client", "10.0.0.1:1", []string{"2001:db8:1:2::99"}, "2001:db8:1:2::/64"},
		{"bracketed ipv6 with port", "10.0.0.1:1", []string{"[2001:db8:1:2::99]:4711"}, "2001:db8:1:2::/64"},
		{"ipv4 with port", "10.0.0.1:1", []string{"203.0.113.9:4711"}, "203.0.113.9"},
		{"ipv4-mapped client", "10.0.0.1:1", []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
		{"ipv4-mapped proxy is trusted", "[::ffff:10.0.0.1]:1", []string{"203.0.113.9"}, "203.0.113.9"},
		{"ipv6 proxy", "[2001:db8:ffff::1]:1", []string{"203.0.113.9, 2001:db8:ffff::2"}, "203.0.113.9"},
		{"Forwarded is not read", "10.0.0.1:1", nil, "10.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := withHeader(tc.remote, "X-Forwarded-For", tc.lines...)
			r.Header.Set("Forwarded", "for=192.0.2.66")
			want := tc.want
			if !strings.Contains(want, "/") {
				want = netip.MustParseAddr(want).String() + "/32"
			}
			require.Equal(t, want, subjectOf(t, c.AppendSubject, r))
		})
	}
}

func TestForwarded(t *testing.T) {
	t.Parallel()
	c := clientNetwork(t, httplimit.ClientConfig{TrustedProxies: trusted, Header: httplimit.ForwardedHeader})
	for _, tc := range []struct {
		name   string
		remote string
		lines  []string
		want   string
	}{
		{"forged header from an untrusted peer is ignored", "198.51.100.7:1", []string{"for=203.0.113.9"}, "198.51.100.7/32"},
		{"trusted peer names the client", "10.0.0.1:1", []string{"for=203.0.113.9"}, "203.0.113.9/32"},
		{"quoted ipv6 with port", "10.0.0.1:1", []string{`for="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::/64"},
		{"quoted ipv6 without port", "10.0.0.1:1", []string{`For="[2001:db8:cafe::17]"`}, "2001:db8:cafe::/64"},
		{"quoted ipv4 with port", "10.0.0.1:1", []string{`for="203.0.113.9:80"`}, "203.0.113.9/32"},
		{"obfuscated port", "10.0.0.1:1", []string{`for="203.0.113.9:_p1"`}, "203.0.113.9/32"},
		{"other parameters", "10.0.0.1:1", []string{`proto=https;for=203.0.113.9;by=10.0.0.1;host="a.example"`}, "203.0.113.9/32"},
		{"white space around separators", "10.0.0.1:1", []string{`for=1.1.1.1 , for=203.0.113.9 ; proto=http`}, "203.0.113.9/32"},
		{"attacker's leftmost elements are skipped", "10.0.0.1:1", []string{`for=1.1.1.1, for="[2001:db8::bad]", for=203.0.113.9`}, "203.0.113.9/32"},
		{"attacker's malformed leftmost element is never parsed", "10.0.0.1:1", []string{`for="unterminated, for=((( , for=203.0.113.9`}, "203.0.113.9/32"},
		{"comma inside a quoted string does not split", "10.0.0.1:1", []string{`for=1.1.1.1, for=203.0.113.9;host="a,for=6.6.6.6"`}, "203.0.113.9/32"},
		{"escaped quote inside a quoted string", "10.0.0.1:1", []string{`for=203.0.113.9;host="a\",for=6.6.6.6"`}, "203.0.113.9/32"},
		{"escaped quote right of a comma in a quoted string", "10.0.0.1:1", []string{`for=203.0.113.9;host="a,for=6.6.6.6\"b"`}, "203.0.113.9/32"},
		{"escaped backslash before a closing quote", "10.0.0.1:1", []string{`for=1.1.1.1, for=203.0.113.9;host="a\\"`}, "203.0.113.9/32"},
		{"trusted hops walked past", "10.0.0.1:1", []string{`for=203.0.113.9, for=10.0.0.2;by=10.0.0.1`}, "203.0.113.9/32"},
		{"lines joined", "10.0.0.1:1", []string{"for=203.0.113.9", "for=10.0.0.2"}, "203.0.113.9/32"},
		{"all trusted: leftmost", "10.0.0.1:1", []string{"for=10.0.0.3, for=10.0.0.2"}, "10.0.0.3/32"},
		{"no header: the proxy itself", "10.0.0.1:1", nil, "10.0.0.1/32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := withHeader(tc.remote, "Forwarded", tc.lines...)
			r.Header.Set("X-Forwarded-For", "192.0.2.66")
			require.Equal(t, tc.want, subjectOf(t, c.AppendSubject, r))
		})
	}
}

// Entries a trusted proxy must have written, and that do not name an
// address, fail closed with a typed error naming the hop, never the text.
func TestForwardingFailsClosed(t *testing.T) {
	t.Parallel()
	xff := clientNetwork(t, httplimit.ClientConfig{TrustedProxies: trusted, Header: httplimit.XForwardedForHeader, MaxHops: 3})
	fwd := clientNetwork(t, httplimit.ClientConfig{TrustedProxies: trusted, Header: httplimit.ForwardedHeader, MaxHops: 3})
	for _, tc := range []struct {
		name    string
		c       *httplimit.ClientNetwork
		header  string
		lines   []string
		problem httplimit.ForwardingProblem
		hop     int
	}{
		{"xff garbage", xff, "X-Forwarded-For", []string{"1.1.1.1, not-an-address"}, httplimit.ForwardingMalformed, 1},
		{"xff host name", xff, "X-Forwarded-For", []string{"client.example"}, httplimit.ForwardingMalformed, 1},
		{"xff unknown", xff, "X-Forwarded-For", []string{"unknown"}, httplimit.ForwardingMalformed, 1},
		{"xff garbage behind a trusted hop", xff, "X-Forwarded-For", []string{"x, 10.0.0.2"}, httplimit.ForwardingMalformed, 2},
		{"xff header injection", xff, "X-Forwarded-For", []string{"203.0.113.9\r\nX-Evil: 1"}, httplimit.ForwardingMalformed, 1},
		{"xff bracketed ipv4", xff, "X-Forwarded-For", []string{"[203.0.113.9]"}, httplimit.ForwardingMalformed, 1},
		{"xff port without address", xff, "X-Forwarded-For", []string{":80"}, httplimit.ForwardingMalformed, 1},
		{"xff too many trusted hops", xff, "X-Forwarded-For", []string{"203.0.113.9, 10.0.0.2, 10.0.0.3, 10.0.0.4, 10.0.0.5"}, httplimit.ForwardingTooManyHops, 4},
		{"fwd unknown", fwd, "Forwarded", []string{"for=unknown"}, httplimit.ForwardingUnknown, 1},
		{"fwd obfuscated", fwd, "Forwarded", []string{`for="_hidden"`}, httplimit.ForwardingUnknown, 1},
		{"fwd obfuscated with port", fwd, "Forwarded", []string{`for="_hidden:80"`}, httplimit.ForwardingUnknown, 1},
		{"fwd no for", fwd, "Forwarded", []string{"proto=https"}, httplimit.ForwardingMalformed, 1},
		{"fwd two for", fwd, "Forwarded", []string{"for=203.0.113.9;for=10.0.0.2"}, httplimit.ForwardingMalformed, 1},
		{"fwd unquoted ipv6", fwd, "Forwarded", []string{"for=2001:db8::1"}, httplimit.ForwardingMalformed, 1},
		{"fwd ipv6 without brackets", fwd, "Forwarded", []string{`for="2001:db8::1"`}, httplimit.ForwardingMalformed, 1},
		{"fwd bracketed ipv4", fwd, "Forwarded", []string{`for="[203.0.113.9]"`}, httplimit.ForwardingMalformed, 1},
		{"fwd bad port", fwd, "Forwarded", []string{`for="203.0.113.9:123456"`}, httplimit.ForwardingMalformed, 1},
		{"fwd empty port", fwd, "Forwarded", []string{`for="[2001:db8::1]:"`}, httplimit.ForwardingMalformed, 1},
		{"fwd unterminated quote", fwd, "Forwarded", []string{`for="203.0.113.9`}, httplimit.ForwardingMalformed, 1},
		{"fwd stray quote", fwd, "Forwarded", []string{`for=1.1.1.1, for=203.0.113.9"`}, httplimit.ForwardingMalformed, 1},
		{"fwd escape in node", fwd, "Forwarded", []string{`for="203.0.113\.9"`}, httplimit.ForwardingMalformed, 1},
		{"fwd space around equals", fwd, "Forwarded", []string{"for = 203.0.113.9"}, httplimit.ForwardingMalformed, 1},
		{"fwd header injection in quotes", fwd, "Forwarded", []string{"for=\"203.0.113.9\r\nX-Evil: 1\""}, httplimit.ForwardingMalformed, 1},
		{"fwd empty value", fwd, "Forwarded", []string{"for="}, httplimit.ForwardingMalformed, 1},
		{"fwd too many trusted hops", fwd, "Forwarded", []string{"for=10.0.0.9", "for=10.0.0.2, for=10.0.0.3, for=10.0.0.4"}, httplimit.ForwardingTooManyHops, 4},
		{"fwd too many trusted hops, all trusted", fwd, "Forwarded", []string{"for=10.0.0.9, for=10.0.0.2, for=10.0.0.3, for=10.0.0.4"}, httplimit.ForwardingTooManyHops, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := withHeader("10.0.0.1:1", tc.header, tc.lines...)
			out, err := tc.c.AppendSubject([]byte("p:"), r)
			require.Equal(t, "p:", string(out))
			var fe *httplimit.ForwardingError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, httplimit.ForwardingError{Header: tc.header, Problem: tc.problem, Hop: tc.hop}, *fe)
			require.ErrorIs(t, err, httplimit.ErrForwarding)
			var secrets [][]byte
			for _, l := range tc.lines {
				secrets = append(secrets, []byte(l))
			}
			leakcheck.Check(t, "ForwardingError", err, secrets...)
		})
	}
}

// A header map built outside net/http may hold a forwarding header under
// a spelling that is not canonical. From a trusted proxy it is read as the
// canonical one would be; from an untrusted peer it is ignored as the
// canonical one is; under two spellings at once the order of the lines is
// unknown, and the request fails closed.
func TestForwardingHeaderSpelling(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header    httplimit.ForwardingHeader
		spellings []string
		line      string
	}{
		{httplimit.XForwardedForHeader, []string{"x-forwarded-for", "X-FORWARDED-FOR", "x-Forwarded-for"}, "203.0.113.9"},
		{httplimit.ForwardedHeader, []string{"forwarded", "FORWARDED"}, "for=203.0.113.9"},
	} {
		c := clientNetwork(t, httplimit.ClientConfig{TrustedProxies: trusted, Header: tc.header})
		for _, name := range tc.spellings {
			t.Run(tc.header.String()+"/"+name, func(t *testing.T) {
				t.Parallel()
				r := request("GET", "/", "10.0.0.1:1", "")
				r.Header = http.Header{name: {"1.1.1.1", tc.line}}
				if tc.header == httplimit.ForwardedHeader {
					r.Header[name][0] = "for=1.1.1.1"
				}
				require.Equal(t, "203.0.113.9/32", subjectOf(t, c.AppendSubject, r))

				// The same spoof from an untrusted peer is never read.
				r.RemoteAddr = "198.51.100.7:1"
				require.Equal(t, "198.51.100.7/32", subjectOf(t, c.AppendSubject, r))

				// Under two spellings, which line a proxy appended is unknown.
				r.RemoteAddr = "10.0.0.1:1"
				r.Header[tc.header.String()] = []string{tc.line}
				_, err := c.Addr(r)
				var fe *httplimit.ForwardingError
				require.ErrorAs(t, err, &fe)
				require.Equal(t, httplimit.ForwardingError{Header: tc.header.String(), Problem: httplimit.ForwardingAmbiguous}, *fe)
				require.ErrorIs(t, err, httplimit.ErrForwarding)
				leakcheck.Check(t, "ForwardingError", err, []byte(tc.line), []byte("1.1.1.1"))

				// An untrusted peer's two spellings are not read either.
				r.RemoteAddr = "198.51.100.7:1"
				require.Equal(t, "198.51.100.7/32", subjectOf(t, c.AppendSubject, r))
			})
		}
	}
}

// MaxHops trusted proxies in front of the client are allowed.
func TestForwardingMaxHops(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header httplimit.ForwardingHeader
		line   string
	}{
		{httplimit.XForwardedForHeader, "1.1.1.1, 203.0.113.9, 10.0.0.2, 10.0.0.3, 10.0.0.4"},
		{httplimit.ForwardedHeader, "for=1.1.1.1, for=203.0.113.9, for=10.0.0.2, for=10.0.0.3, for=10.0.0.4"},
	} {
		c := clientNetwork(t, httplimit.ClientConfig{TrustedProxies: trusted, Header: tc.header, MaxHops: 3})
		require.Equal(t, "203.0.113.9/32", subjectOf(t, c.AppendSubject, withHeader("10.0.0.1:1", tc.header.String(), tc.line)))
		// Three trusted proxies and nothing else: the leftmost is the client.
		_, rest, _ := strings.Cut(tc.line, "203.0.113.9, ")
		require.Equal(t, "10.0.0.2/32", subjectOf(t, c.AppendSubject, withHeader("10.0.0.1:1", tc.header.String(), rest)))
	}
}

// An oversize header costs only the entries the trusted proxies added:
// the client's megabyte is never parsed, nor does it fail the request.
func TestForwardingOversize(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("1.1.1.1, ", 1<<17) + `for="((((` + strings.Repeat("x", 1<<16)
	for _, tc := range []struct {
		header httplimit.ForwardingHeader
		line   string
	}{
		{httplimit.XForwardedForHeader, huge + ", 203.0.113.9, 10.0.0.2"},
		{httplimit.ForwardedHeader, huge + `", for=203.0.113.9, for=10.0.0.2`},
	} {
		c := clientNetwork(t, httplimit.ClientConfig{TrustedProxies: trusted, Header: tc.header})
		r := withHeader("10.0.0.1:1", tc.header.String(), tc.line)
		require.Equal(t, "203.0.113.9/32", subjectOf(t, c.AppendSubject, r))
		// From an untrusted peer nothing of it is read.
		r.RemoteAddr = "198.51.100.7:1"
		require.Equal(t, "198.51.100.7/32", subjectOf(t, c.AppendSubject, r))
	}
}

// Without trusted proxies no forwarding header is ever read, whoever the
// peer is.
func TestDefaultReadsNoHeader(t *testing.T) {
	t.Parallel()
	c := clientNetwork(t, httplimit.ClientConfig{})
	for _, remote := range []string{"10.0.0.1:1", "127.0.0.1:1", "[::1]:1"} {
		r := request("GET", "/", remote, "")
		r.Header.Set("X-Forwarded-For", "203.0.113.9")
		r.Header.Set("Forwarded", "for=203.0.113.9")
		r.Header.Set("X-Real-Ip", "203.0.113.9")
		want := netip.MustParseAddrPort(remote).Addr().String()
		addr, err := c.Addr(r)
		require.NoError(t, err)
		require.Equal(t, want, addr.String())
		got := subjectOf(t, httplimit.RemoteNetwork, r)
		require.NotContains(t, got, "203.0.113")
	}
}

// fuzzWalk checks what a walk may return: a valid, unmapped, zone-free
// address that is the peer or spelled in the header; or a typed error.
func fuzzWalk(t *testing.T, c *httplimit.ClientNetwork, header, remote string, lines []string) {
	r := withHeader(remote, header, lines...)
	addr, err := c.Addr(r)
	if err != nil {
		require.ErrorIs(t, err, httplimit.ErrForwarding)
		return
	}
	require.True(t, addr.IsValid())
	require.False(t, addr.Is4In6())
	require.Empty(t, addr.Zone())
	// The library counts the peer without its zone and IPv4-mapped
	// addresses as IPv4; compare with the peer it counts, or a zoned
	// untrusted peer looks like one whose header was read.
	peer := netip.MustParseAddrPort(remote).Addr().WithZone("").Unmap()
	if addr == peer {
		return
	}
	require.True(t, trusted[0].Contains(peer) || trusted[1].Contains(peer), "an untrusted peer's header was read")
	// The client is the first untrusted hop or, when all are trusted, a
	// trusted one.
	_, err = c.Prefix(r)
	require.NoError(t, err)
}

func FuzzForwarded(f *testing.F) {
	for _, s := range []string{
		"for=203.0.113.9", `for="[2001:db8:cafe::17]:4711"`, `for=1.1.1.1, for=203.0.113.9;host="a,b"`,
		`for="_hidden", for=unknown`, `for="\"`, `;;,,=="`, "for=10.0.0.2, for=10.0.0.3",
	} {
		f.Add(s, "10.0.0.1:1")
		f.Add(s, "198.51.100.7:1")
	}
	f.Add("for=203.0.113.9", "[0000::0%0]:0")
	f.Add("for=203.0.113.9", "[::ffff:10.0.0.1%0]:1")
	c := clientNetwork(f, httplimit.ClientConfig{TrustedProxies: trusted, Header: httplimit.ForwardedHeader})
	f.Fuzz(func(t *testing.T, line, remote string) {
		if _, err := netip.ParseAddrPort(remote); err != nil {
			return
		}
		fuzzWalk(t, c, "Forwarded", remote, strings.Split(line, "\n"))
	})
}

func FuzzXForwardedFor(f *testing.F) {
	for _, s := range []string{
		"203.0.113.9", "1.1.1.1, 203.0.113.9, 10.0.0.2", "[2001:db8::1]:80", "::ffff:1.2.3.4",
		",,", "10.0.0.2\n203.0.113.9", "fe80::1%eth0",
	} {
		f.Add(s, "10.0.0.1:1")
		f.Add(s, "[2001:db8:ffff::1]:1")
	}
	// An untrusted peer with a zone: the walk drops the zone, as it does
	// for every address it returns, and still reads no header.
	f.Add("::0::", "[0000::0%0]:0")
	c := clientNetwork(f, httplimit.ClientConfig{TrustedProxies: trusted, Header: httplimit.XForwardedForHeader})
	f.Fuzz(func(t *testing.T, line, remote string) {
		if _, err := netip.ParseAddrPort(remote); err != nil {
			return
		}
		fuzzWalk(t, c, "X-Forwarded-For", remote, strings.Split(line, "\n"))
	})
}
