package httplimit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
)

// TestForwardedEmptyPairs: RFC 7239's forwarded-element is
// [ forwarded-pair ] *( ";" [ forwarded-pair ] ), so a proxy may end its
// element with ";" or leave a pair out between two. Such an element was
// refused as malformed, so every request behind that proxy was refused.
// An element with no "for" pair at all still fails closed.
func TestForwardedEmptyPairs(t *testing.T) {
	t.Parallel()
	c := clientNetwork(t, httplimit.ClientConfig{TrustedProxies: trusted, Header: httplimit.ForwardedHeader})
	for _, line := range []string{
		"for=192.0.2.7;",
		";for=192.0.2.7",
		"for=192.0.2.7;;proto=https",
		"proto=https; ;for=192.0.2.7;",
		`for="192.0.2.7";by=10.0.0.9;`,
		"for=10.0.0.9;, for=192.0.2.7;",
	} {
		p, err := c.Prefix(withHeader("10.0.0.1:4000", "Forwarded", line))
		require.NoError(t, err, line)
		require.Equal(t, "192.0.2.7/32", p.String(), line)
	}
	for _, line := range []string{";", ";;", "; ;proto=https", "for=192.0.2.7;;for=192.0.2.8", "for=192.0.2.7;x"} {
		_, err := c.Prefix(withHeader("10.0.0.1:4000", "Forwarded", line))
		var fe *httplimit.ForwardingError
		require.ErrorAs(t, err, &fe, line)
		require.Equal(t, httplimit.ForwardingMalformed, fe.Problem, line)
	}
}
