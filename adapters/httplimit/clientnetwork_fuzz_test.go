package httplimit_test

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
)

// FuzzClientNetworkPrefix builds a ClientNetwork from prefix lengths and a
// NAT64 prefix of any value, and derives the network of a peer from a
// RemoteAddr of any text. A config is refused with a *ConfigError exactly
// when a length or the NAT64 prefix is out of range; a RemoteAddr that is
// not an address and a port is ErrRemoteAddr, which does not quote it;
// otherwise the network is masked, of the configured length for its
// family, holds the peer (or the IPv4 client its address carries), is the
// same for the peer's port, zone and IPv4-mapped spelling, and its text
// form parses back to it.
func FuzzClientNetworkPrefix(f *testing.F) {
	for _, remote := range []string{
		"192.0.2.4:1234", "[2001:db8:1:2:3:4:5:6]:443", "[::ffff:192.0.2.4]:1", "[fe80::1%eth0]:80",
		"[64:ff9b::c000:204]:1", "[2002:c000:0204::1]:1", "[2001:0:4136:e378:8000:63bf:3fff:fdd2]:1",
		"[2001:db8:64::c000:204]:1", "@", "", "192.0.2.4", "[::1]", "S3cr3t-not-an-address:1", "[::%S3cr3t]:1",
	} {
		f.Add(remote, 0, 0, "2001:db8:64::/96")
		f.Add(remote, 24, 48, "")
	}
	f.Add("192.0.2.4:1", 33, 0, "")
	f.Add("192.0.2.4:1", -1, 129, "::ffff:0:0/96")
	f.Add("192.0.2.4:1", 1, 1, "2001:db8::/64")
	f.Fuzz(func(t *testing.T, remote string, v4, v6 int, nat64 string) {
		cfg := httplimit.ClientConfig{IPv4Prefix: v4, IPv6Prefix: v6}
		var nat64Prefix netip.Prefix
		if nat64 != "" {
			p, err := netip.ParsePrefix(nat64)
			if err != nil {
				return
			}
			nat64Prefix = p
			cfg.NAT64Prefixes = []netip.Prefix{p}
		}
		c, err := httplimit.NewClientNetwork(cfg)
		wantOK := (v4 >= 0 && v4 <= 32) && (v6 >= 0 && v6 <= 128) &&
			(nat64 == "" || nat64Prefix.Addr().Is6() && !nat64Prefix.Addr().Is4In6() && nat64Prefix.Addr().Zone() == "" && nat64Prefix.Bits() == 96)
		if !wantOK {
			var ce *httplimit.ConfigError
			require.ErrorAs(t, err, &ce)
			return
		}
		require.NoError(t, err)

		r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
		p, err := c.Prefix(r)
		ap, perr := netip.ParseAddrPort(remote)
		if perr != nil {
			require.ErrorIs(t, err, httplimit.ErrRemoteAddr)
			if len(remote) >= 6 {
				require.NotContains(t, err.Error(), remote)
			}
			return
		}
		require.NoError(t, err)
		require.True(t, p.IsValid())
		require.Equal(t, p.Masked(), p, "masked")
		peer := ap.Addr().WithZone("").Unmap()
		client := peer
		if peer.Is6() {
			// The address's last 32 bits, or Teredo's obfuscated ones,
			// are the client when it carries an IPv4 address.
			a := peer.As16()
			switch {
			case netip.MustParsePrefix("64:ff9b::/96").Contains(peer), nat64 != "" && nat64Prefix.Masked().Contains(peer):
				client = netip.AddrFrom4([4]byte(a[12:16]))
			case netip.MustParsePrefix("2002::/16").Contains(peer):
				client = netip.AddrFrom4([4]byte(a[2:6]))
			case netip.MustParsePrefix("2001::/32").Contains(peer):
				client = netip.AddrFrom4([4]byte{^a[12], ^a[13], ^a[14], ^a[15]})
			}
		}
		require.True(t, p.Contains(client), "%v does not hold %v", p, client)
		want := v6
		if want == 0 {
			want = httplimit.DefaultIPv6Prefix
		}
		if client.Is4() {
			want = v4
			if want == 0 {
				want = httplimit.DefaultIPv4Prefix
			}
		}
		require.Equal(t, want, p.Bits())
		require.Equal(t, p, c.PrefixOf(ap.Addr()))

		// The same peer by another spelling is the same network.
		for _, other := range []netip.AddrPort{
			netip.AddrPortFrom(ap.Addr(), ap.Port()^1),
			netip.AddrPortFrom(ap.Addr().WithZone(""), ap.Port()),
			netip.AddrPortFrom(netip.AddrFrom16(peer.As16()), ap.Port()),
		} {
			q, err := c.Prefix(&http.Request{RemoteAddr: other.String(), Header: http.Header{}})
			require.NoError(t, err, other)
			require.Equal(t, p, q, other)
		}
		subject, err := c.AppendSubject([]byte("k:"), r)
		require.NoError(t, err)
		back, err := netip.ParsePrefix(strings.TrimPrefix(string(subject), "k:"))
		require.NoError(t, err)
		require.Equal(t, p, back)
		require.False(t, errors.Is(err, httplimit.ErrRemoteAddr))
	})
}
