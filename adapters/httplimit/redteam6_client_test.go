package httplimit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
)

// One client, however its peer address is spelled, is one subject: the
// port, the zone, the case of hexadecimal digits, leading zeros of IPv6
// groups and the IPv4 forms an IPv6 address carries never give it a fresh
// key. A peer that is not an address and a port (a Unix socket's "@" or
// "") fails closed, even with a trusted proxy's header present, rather
// than counting every such request under one key.
func TestClientSpellingsAreOneSubject(t *testing.T) {
	t.Parallel()
	behind := clientNetwork(t, httplimit.ClientConfig{TrustedProxies: trusted, Header: httplimit.XForwardedForHeader})
	for _, key := range []httplimit.KeyFunc{httplimit.RemoteNetwork, behind.AppendSubject} {
		for want, spellings := range map[string][]string{
			"192.0.2.7/32": {
				"192.0.2.7:1", "192.0.2.7:65535", "192.0.2.7:0", "[::ffff:192.0.2.7]:1", "[::FFFF:C000:0207]:2",
				"[64:ff9b::192.0.2.7]:3", "[2002:c000:207:1234::1]:4", "[::ffff:192.0.2.7%eth0]:5",
			},
			"2001:db8:1:2::/64": {"[2001:db8:1:2::1]:1", "[2001:DB8:1:2:FFFF:0:0:1]:2", "[2001:0db8:0001:0002::9]:3", "[2001:db8:1:2::1%eth1]:4"},
			"fe80::/64":         {"[fe80::1%eth0]:1", "[fe80::2%eth1]:2", "[FE80::1]:3"},
		} {
			for _, remote := range spellings {
				require.Equal(t, want, subjectOf(t, key, withHeader(remote, "X-Forwarded-For", "198.51.100.1")), remote)
			}
		}
		for _, remote := range []string{"@", "", "/run/app.sock"} {
			_, err := key(nil, withHeader(remote, "X-Forwarded-For", "198.51.100.1"))
			require.ErrorIs(t, err, httplimit.ErrRemoteAddr, "%q", remote)
		}
	}
}
