package httplimit

import (
	"cmp"
	"fmt"
	"net/http"
	"net/netip"
)

// Default prefix lengths and bounds of a [ClientConfig].
const (
	DefaultIPv4Prefix = 32
	DefaultIPv6Prefix = 64
	DefaultMaxHops    = 16
	MaxMaxHops        = 64
)

// ForwardingHeader names the header trusted proxies use to name the client.
type ForwardingHeader uint8

const (
	// NoForwardingHeader: forwarding headers are never read; the client is
	// the peer of the connection. It is the default.
	NoForwardingHeader ForwardingHeader = iota
	// ForwardedHeader: the Forwarded header of RFC 7239, its "for"
	// parameter.
	ForwardedHeader
	// XForwardedForHeader: the X-Forwarded-For header, a list of addresses.
	XForwardedForHeader
)

// String returns the header's name, or "none".
func (h ForwardingHeader) String() string {
	switch h {
	case ForwardedHeader:
		return "Forwarded"
	case XForwardedForHeader:
		return "X-Forwarded-For"
	case NoForwardingHeader:
		return "none"
	}
	return fmt.Sprintf("ForwardingHeader(%d)", uint8(h))
}

// ClientConfig says how a [ClientNetwork] finds a request's client and
// which network it counts the client by. The zero value counts the peer of
// the connection, an IPv4 address alone and an IPv6 address by its /64, and
// reads no forwarding header.
type ClientConfig struct {
	// IPv4Prefix is the prefix length an IPv4 client is counted by, 1 to
	// 32. Default 32 ([DefaultIPv4Prefix]).
	IPv4Prefix int
	// IPv6Prefix is the prefix length an IPv6 client is counted by, 1 to
	// 128. A host usually gets a whole /64, so counting single IPv6
	// addresses would let one client spread over 2^64 subjects. Default 64
	// ([DefaultIPv6Prefix]).
	IPv6Prefix int
	// TrustedProxies are the networks of the reverse proxies in front of
	// the service. Only a request whose peer is in one of them may name its
	// client in Header. IPv4 networks are written as IPv4, not as
	// IPv4-mapped IPv6. A /0 is refused: it would trust every client, and
	// any peer in these networks can name any client, so keep them as
	// narrow as the proxies. Default none.
	TrustedProxies []netip.Prefix
	// Header is the one forwarding header the trusted proxies write,
	// required with TrustedProxies. Name only a header your proxies
	// overwrite or append to: a header they pass through untouched is
	// written by the client. Default [NoForwardingHeader].
	Header ForwardingHeader
	// MaxHops is the most trusted proxies the header may name before the
	// client, 1 to 64; a request whose header names more is refused, which
	// bounds the work one request costs. Default 16 ([DefaultMaxHops]).
	MaxHops int
	// NAT64Prefixes are the network-specific /96 prefixes of NAT64 or SIIT
	// translators (RFC 6052) through which IPv4 clients reach the service:
	// an address in one is counted as the IPv4 address in its last 32
	// bits. Without it, every IPv4 client behind such a translator would
	// share the translator's /64, and one of them could use up the quota of
	// all. The well-known prefix 64:ff9b::/96 is always counted this way.
	// Default none.
	NAT64Prefixes []netip.Prefix
}

// ClientNetwork finds the client of a request and the network it is
// counted by. It never believes a forwarding header on its own: by default
// the client is the peer of the connection (the request's RemoteAddr).
//
// With [ClientConfig.TrustedProxies] and [ClientConfig.Header] set, a
// request whose peer is a trusted proxy is read from the header's right
// end, the entry the nearest proxy added, leftwards past every trusted
// address; the first address that is not a trusted proxy is the client.
// Entries left of it were written by the client and are never parsed. When
// every entry is a trusted proxy the leftmost is the client; when the
// header is absent the peer is. Multiple header lines form one list, in
// order. The header is found under any spelling of its name, as a map
// built outside net/http may hold "x-forwarded-for"; a map holding it
// under two spellings fails closed, as the order of their lines is
// unknown.
//
// An entry that a trusted proxy must have written but that does not parse,
// that says "unknown" or an obfuscated identifier, or a chain longer than
// [ClientConfig.MaxHops] fails closed with a [*ForwardingError]: the
// request is refused rather than counted against the proxy, where it would
// share one quota with every other client behind it.
//
// IPv4-mapped IPv6 addresses are counted as IPv4, and IPv6 zones are
// dropped. So are addresses that carry their client's IPv4 address, which
// the /64 of their IPv6 form would not tell apart (many IPv4 clients
// share one) or would multiply (one IPv4 client holds 65,536 of them):
// NAT64 addresses in 64:ff9b::/96 or a configured
// [ClientConfig.NAT64Prefixes] prefix, 6to4 addresses (2002::/16) and
// Teredo addresses (2001::/32, the client's address obfuscated in the last
// 32 bits). A ClientNetwork is safe for concurrent use.
//
// A peer with no IP address has no network to count: a RemoteAddr that is
// not an address and a port, such as the "@" or "" net/http sets for a
// connection over a Unix socket, is refused with [ErrRemoteAddr], even
// where a trusted proxy would name the client, as no address of a Unix
// socket can be in TrustedProxies. Connect such a proxy over TCP. A
// link-local peer (fe80::/10) is counted by its /64 like any IPv6 peer,
// its zone dropped: every link-local client, of every link, shares
// fe80::/64.
//
// A nil *ClientNetwork and a zero ClientNetwork behave as one built from
// the zero [ClientConfig]: the peer, by its IPv4 address or IPv6 /64. A
// nil *http.Request has no client: [ErrRemoteAddr].
type ClientNetwork struct {
	v4, v6  int
	trusted []netip.Prefix
	nat64   []netip.Prefix
	header  ForwardingHeader
	maxHops int
}

var defaultClients = &ClientNetwork{v4: DefaultIPv4Prefix, v6: DefaultIPv6Prefix}

// NewClientNetwork validates cfg and returns a ClientNetwork.
func NewClientNetwork(cfg ClientConfig) (*ClientNetwork, error) {
	c := &ClientNetwork{v4: cfg.IPv4Prefix, v6: cfg.IPv6Prefix, header: cfg.Header, maxHops: cfg.MaxHops}
	switch {
	case c.v4 == 0:
		c.v4 = DefaultIPv4Prefix
	case c.v4 < 1 || c.v4 > 32:
		return nil, &ConfigError{Field: "IPv4Prefix", Want: "1 to 32, or 0 for 32"}
	}
	switch {
	case c.v6 == 0:
		c.v6 = DefaultIPv6Prefix
	case c.v6 < 1 || c.v6 > 128:
		return nil, &ConfigError{Field: "IPv6Prefix", Want: "1 to 128, or 0 for 64"}
	}
	switch {
	case c.maxHops == 0:
		c.maxHops = DefaultMaxHops
	case c.maxHops < 1 || c.maxHops > MaxMaxHops:
		return nil, &ConfigError{Field: "MaxHops", Want: fmt.Sprintf("1 to %d, or 0 for %d", MaxMaxHops, DefaultMaxHops)}
	}
	switch c.header {
	case NoForwardingHeader:
		if len(cfg.TrustedProxies) > 0 {
			return nil, &ConfigError{Field: "Header", Want: "ForwardedHeader or XForwardedForHeader when TrustedProxies is set"}
		}
	case ForwardedHeader, XForwardedForHeader:
		if len(cfg.TrustedProxies) == 0 {
			return nil, &ConfigError{Field: "TrustedProxies", Want: "set when Header is"}
		}
	default:
		return nil, &ConfigError{Field: "Header", Want: "NoForwardingHeader, ForwardedHeader or XForwardedForHeader"}
	}
	for i, p := range cfg.TrustedProxies {
		if !p.IsValid() || p.Addr().Zone() != "" {
			return nil, &ConfigError{Field: fmt.Sprintf("TrustedProxies[%d]", i), Want: "a valid network without a zone"}
		}
		if p.Addr().Is4In6() {
			// Addresses are unmapped before they are matched, so a mapped
			// network would never match: say so rather than trust nothing.
			return nil, &ConfigError{Field: fmt.Sprintf("TrustedProxies[%d]", i), Want: "written as IPv4, not IPv4-mapped IPv6"}
		}
		if p.Bits() == 0 {
			// Every client of the family would be a trusted proxy: the walk
			// would pass the address the real proxy wrote and believe the
			// leftmost entry, which the client wrote itself.
			return nil, &ConfigError{Field: fmt.Sprintf("TrustedProxies[%d]", i), Want: "the proxies' network, not every address (/0), which would trust what every client writes"}
		}
		c.trusted = append(c.trusted, p.Masked())
	}
	for i, p := range cfg.NAT64Prefixes {
		if !p.IsValid() || !p.Addr().Is6() || p.Addr().Is4In6() || p.Addr().Zone() != "" || p.Bits() != 96 {
			// RFC 6052's shorter prefixes place the IPv4 address around a
			// reserved octet; translators in front of services use a /96.
			return nil, &ConfigError{Field: fmt.Sprintf("NAT64Prefixes[%d]", i), Want: "an IPv6 /96 without a zone"}
		}
		c.nat64 = append(c.nat64, p.Masked())
	}
	return c, nil
}

// Networks whose addresses carry an IPv4 address: the NAT64 well-known
// prefix (RFC 6052), 6to4 (RFC 3056) and Teredo (RFC 4380).
var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	teredo         = netip.MustParsePrefix("2001::/32")
)

// embeddedIPv4 returns the IPv4 address of the client that addr, an
// unmapped IPv6 address without a zone, stands for, if it carries one.
func (c *ClientNetwork) embeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	a := addr.As16()
	switch {
	case nat64WellKnown.Contains(addr):
		return netip.AddrFrom4([4]byte(a[12:16])), true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte(a[2:6])), true
	case teredo.Contains(addr):
		return netip.AddrFrom4([4]byte{^a[12], ^a[13], ^a[14], ^a[15]}), true
	}
	for _, p := range c.nat64 {
		if p.Contains(addr) {
			return netip.AddrFrom4([4]byte(a[12:16])), true
		}
	}
	return addr, false
}

// RemoteNetwork is a [KeyFunc] that appends the network of the request's
// peer: its IPv4 address, or its IPv6 /64. It reads no forwarding header.
// Behind a reverse proxy, use a [ClientNetwork] that trusts the proxy.
func RemoteNetwork(dst []byte, r *http.Request) ([]byte, error) {
	return defaultClients.AppendSubject(dst, r)
}

// AppendSubject is a [KeyFunc]: it appends the client's network to dst in
// netip.Prefix text form, such as "192.0.2.4/32" or "2001:db8:1:2::/64".
func (c *ClientNetwork) AppendSubject(dst []byte, r *http.Request) ([]byte, error) {
	p, err := c.Prefix(r)
	if err != nil {
		return dst, err
	}
	return p.AppendTo(dst), nil
}

// Prefix returns the network the request's client is counted by.
func (c *ClientNetwork) Prefix(r *http.Request) (netip.Prefix, error) {
	addr, err := c.Addr(r)
	if err != nil {
		return netip.Prefix{}, err
	}
	return c.PrefixOf(addr), nil
}

// PrefixOf returns the network addr is counted by, after unmapping an
// IPv4-mapped address, dropping a zone and finding the IPv4 client a
// NAT64, 6to4 or Teredo address stands for. An invalid addr (the zero
// netip.Addr) belongs to no network: PrefixOf returns the zero Prefix,
// whose IsValid is false. Never count by it: every such client would
// share one subject.
func (c *ClientNetwork) PrefixOf(addr netip.Addr) netip.Prefix {
	if c == nil {
		c = defaultClients
	}
	if !addr.IsValid() {
		return netip.Prefix{}
	}
	addr = addr.WithZone("").Unmap()
	if addr.Is6() {
		addr, _ = c.embeddedIPv4(addr)
	}
	// A zero ClientNetwork's lengths are 0, which would count every
	// client as one network: they mean the defaults, as in ClientConfig.
	bits := cmp.Or(c.v6, DefaultIPv6Prefix)
	if addr.Is4() {
		bits = cmp.Or(c.v4, DefaultIPv4Prefix)
	}
	// Prefix fails only for an invalid address or a length out of range,
	// and both were ruled out (the lengths by ClientConfig's checks).
	p, _ := addr.Prefix(bits)
	return p
}

// Addr returns the request's client address: the peer of the connection,
// or the client a trusted proxy named.
func (c *ClientNetwork) Addr(r *http.Request) (netip.Addr, error) {
	if c == nil {
		c = defaultClients
	}
	if r == nil {
		return netip.Addr{}, ErrRemoteAddr
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		// The parser's error would quote RemoteAddr.
		return netip.Addr{}, ErrRemoteAddr
	}
	peer := ap.Addr().WithZone("").Unmap()
	if c.header == NoForwardingHeader || !c.isTrusted(peer) {
		return peer, nil
	}
	return c.forwardedClient(r.Header, peer)
}

func (c *ClientNetwork) isTrusted(addr netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
