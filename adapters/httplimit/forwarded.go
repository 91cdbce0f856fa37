package httplimit

import (
	"net/http"
	"net/netip"
	"strings"
)

// forwardedClient walks the configured forwarding header from its right end
// and returns the first address that is not a trusted proxy. peer, the
// connection's trusted peer, is the client when the header has no entry.
func (c *ClientNetwork) forwardedClient(h http.Header, peer netip.Addr) (netip.Addr, error) {
	name := c.header.String()
	lines, ok := headerLines(h, name)
	if !ok {
		return netip.Addr{}, &ForwardingError{Header: name, Problem: ForwardingAmbiguous}
	}
	client := peer
	hop, trustedHops := 0, 0
	for li := len(lines) - 1; li >= 0; li-- {
		line := lines[li]
		for more := true; more; {
			var elem string
			line, elem, more = cutLastElement(line, c.header == ForwardedHeader)
			elem = trimOWS(elem)
			if elem == "" {
				// An empty list element (",," or a blank line) is no hop;
				// RFC 9110 section 5.6.1 has recipients skip it.
				continue
			}
			hop++
			var addr netip.Addr
			var problem ForwardingProblem
			if c.header == ForwardedHeader {
				addr, problem = forwardedElementFor(elem)
			} else {
				addr, problem = parseXFFNode(elem)
			}
			if problem != 0 {
				return netip.Addr{}, &ForwardingError{Header: name, Problem: problem, Hop: hop}
			}
			if !c.isTrusted(addr) {
				return addr, nil
			}
			if trustedHops++; trustedHops > c.maxHops {
				return netip.Addr{}, &ForwardingError{Header: name, Problem: ForwardingTooManyHops, Hop: hop}
			}
			client = addr
		}
	}
	return client, nil
}

// headerLines returns the lines of the header name, which is in canonical
// form, as http.Header.Values does, and also under a spelling that is not
// canonical: a map built outside net/http (a test, a serverless adapter)
// may hold "x-forwarded-for", and ignoring it would count every client
// behind the proxy as the proxy. ok is false when the map holds the header
// under two spellings: the order of their lines, and so which entry the
// nearest proxy added, is unknown.
func headerLines(h http.Header, name string) (lines []string, ok bool) {
	lines, found := h[name]
	for k, v := range h {
		if len(k) != len(name) || k == name || !strings.EqualFold(k, name) {
			continue
		}
		if found {
			return nil, false
		}
		lines, found = v, true
	}
	return lines, true
}

// cutLastElement splits a comma-separated list into the text before its
// last element and that element; more is false when it was the only one.
// With quotes set (Forwarded), commas inside quoted strings do not split:
// scanning backwards, a '"' opens or closes a quoted string unless an odd
// number of backslashes precedes it. Only the element itself is scanned,
// unless its quotes are unbalanced; then the element runs to the start of
// the line and fails to parse, failing closed.
func cutLastElement(line string, quotes bool) (rest, elem string, more bool) {
	inQuote := false
	for i := len(line) - 1; i >= 0; i-- {
		switch c := line[i]; {
		case c == '"' && quotes && evenBackslashesBefore(line, i):
			inQuote = !inQuote
		case c == ',' && !inQuote:
			return line[:i], line[i+1:], true
		}
	}
	return "", line, false
}

func evenBackslashesBefore(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 0
}

// trimOWS removes optional white space (spaces and tabs) at both ends.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// forwardedElementFor parses one forwarded-element of RFC 7239 (pairs
// "token=value" separated by ';', values tokens or quoted strings, names
// case-insensitive, white space allowed around ';') and returns the address
// of its single "for" parameter. A pair may be empty, as the grammar
// allows ("[ forwarded-pair ] *( ";" [ forwarded-pair ] )"): a proxy that
// ends its element with ';', or leaves an optional parameter out between
// two, wrote a valid element, which must not refuse every request.
func forwardedElementFor(elem string) (netip.Addr, ForwardingProblem) {
	var node string
	found := false
	for elem != "" {
		if elem[0] == ';' {
			elem = trimOWS(elem[1:])
			continue
		}
		n := tokenLen(elem)
		if n == 0 || n == len(elem) || elem[n] != '=' {
			return netip.Addr{}, ForwardingMalformed
		}
		name := elem[:n]
		elem = elem[n+1:]
		var value string
		if elem != "" && elem[0] == '"' {
			var ok bool
			if value, elem, ok = cutQuoted(elem); !ok {
				return netip.Addr{}, ForwardingMalformed
			}
		} else {
			v := tokenLen(elem)
			if v == 0 {
				return netip.Addr{}, ForwardingMalformed
			}
			value, elem = elem[:v], elem[v:]
		}
		if strings.EqualFold(name, "for") {
			if found {
				return netip.Addr{}, ForwardingMalformed
			}
			node, found = value, true
		}
		elem = trimOWS(elem)
		if elem != "" && elem[0] != ';' {
			return netip.Addr{}, ForwardingMalformed
		}
	}
	if !found {
		return netip.Addr{}, ForwardingMalformed
	}
	return parseForwardedNode(node)
}

// tokenLen returns the length of the RFC 9110 token at the start of s.
func tokenLen(s string) int {
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return i
		}
	}
	return len(s)
}

func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// cutQuoted splits a quoted string (RFC 9110 section 5.6.4) off the start
// of s and returns its content as written, escapes included: a node never
// needs one, so a backslash in a "for" value fails to parse as an address.
func cutQuoted(s string) (content, rest string, ok bool) {
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[1:i], s[i+1:], true
		case c == '\\':
			i++
			if i == len(s) || !quotable(s[i]) {
				return "", "", false
			}
		case !quotable(c):
			return "", "", false
		}
	}
	return "", "", false
}

// quotable reports whether c may stand in a quoted string: tab, space,
// visible ASCII and obs-text, never another control character.
func quotable(c byte) bool { return c == '\t' || (c >= 0x20 && c != 0x7f) }

// parseForwardedNode parses an RFC 7239 node: an IPv4 address or a
// bracketed IPv6 address, each with an optional port. "unknown" and
// obfuscated identifiers name no address.
func parseForwardedNode(node string) (netip.Addr, ForwardingProblem) {
	host, port := node, ""
	if strings.HasPrefix(node, "[") {
		end := strings.IndexByte(node, ']')
		if end < 0 {
			return netip.Addr{}, ForwardingMalformed
		}
		host, port = node[1:end], node[end+1:]
		if port != "" {
			if port[0] != ':' {
				return netip.Addr{}, ForwardingMalformed
			}
			port = port[1:]
			if !validNodePort(port) {
				return netip.Addr{}, ForwardingMalformed
			}
		}
		addr, err := netip.ParseAddr(host)
		if err != nil || !addr.Is6() {
			return netip.Addr{}, ForwardingMalformed
		}
		return addr.WithZone("").Unmap(), 0
	}
	if i := strings.IndexByte(node, ':'); i >= 0 {
		host, port = node[:i], node[i+1:]
		if !validNodePort(port) {
			return netip.Addr{}, ForwardingMalformed
		}
	}
	if strings.EqualFold(host, "unknown") || strings.HasPrefix(host, "_") {
		return netip.Addr{}, ForwardingUnknown
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || !addr.Is4() {
		return netip.Addr{}, ForwardingMalformed
	}
	return addr, 0
}

// validNodePort reports whether p is a node-port of RFC 7239: 1 to 5
// digits, or "_" and letters, digits, '.', '_' or '-'.
func validNodePort(p string) bool {
	if p == "" {
		return false
	}
	if p[0] == '_' {
		if len(p) == 1 {
			return false
		}
		for i := 1; i < len(p); i++ {
			c := p[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
		return true
	}
	if len(p) > 5 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	return true
}

// parseXFFNode parses one X-Forwarded-For entry: an IPv4 or IPv6 address,
// an IPv4 address with a port, or a bracketed IPv6 address with an
// optional port, the forms proxies are seen to write.
func parseXFFNode(s string) (netip.Addr, ForwardingProblem) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, ForwardingMalformed
		}
		if rest := s[end+1:]; rest != "" && (rest[0] != ':' || !validDigitsPort(rest[1:])) {
			return netip.Addr{}, ForwardingMalformed
		}
		addr, err := netip.ParseAddr(s[1:end])
		if err != nil || !addr.Is6() {
			return netip.Addr{}, ForwardingMalformed
		}
		return addr.WithZone("").Unmap(), 0
	}
	if addr, err := netip.ParseAddr(s); err == nil {
		return addr.WithZone("").Unmap(), 0
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Is4() {
		return ap.Addr(), 0
	}
	return netip.Addr{}, ForwardingMalformed
}

func validDigitsPort(p string) bool {
	return p != "" && p[0] != '_' && validNodePort(p)
}
