package httplimit

import "net/http"

// Field names. net/http stores header names in canonical form, so these
// are the map keys; HTTP field names are case-insensitive.
const (
	HeaderRateLimit       = "Ratelimit"
	HeaderRateLimitPolicy = "Ratelimit-Policy"
	HeaderRetryAfter      = "Retry-After"
)

// Draft11 writes the RateLimit and RateLimit-Policy fields of
// draft-ietf-httpapi-ratelimit-headers-11, both Lists of structured fields
// (RFC 9651) whose items are the policies' names as sf-strings:
//
//	RateLimit-Policy: "auth.login/client";q=40;w=60, "auth.login/identity";q=8;w=60
//	RateLimit: "auth.login/identity";r=0;t=37, "auth.login/client";r=39;t=60
//
// RateLimit-Policy names every quota with its limit (q) and its window in
// whole seconds, rounded up (w); RateLimit names every known quota with the
// units left (r, 0 for a quota or shadow denial) and the seconds until its
// window ends, rounded up (t). Items keep the order they are given, most
// restrictive first. Integers above 999,999,999,999,999 are written as that
// bound. A quota whose name an sf-string cannot carry is left out, so that
// no byte outside printable ASCII reaches a header; a field with no item is
// removed.
type Draft11 struct{}

var _ FieldWriter = Draft11{}

// WriteFields sets RateLimit-Policy and RateLimit on h. A nil h gets
// nothing.
func (Draft11) WriteFields(h http.Header, quotas []Quota) {
	if h == nil {
		return
	}
	// Both values are built in one buffer and cut from one string, and share
	// one backing array for their []string: two allocations per response.
	var buf [512]byte
	b := buf[:0]
	n := 0
	for i := range quotas {
		q := &quotas[i]
		start := len(b)
		if n > 0 {
			b = append(b, ", "...)
		}
		var ok bool
		if b, ok = appendSFString(b, q.Name); !ok {
			b = b[:start]
			continue
		}
		b = append(b, ";q="...)
		b = appendSFInteger(b, q.Limit)
		if w := ceilSeconds(q.Window); w > 0 {
			b = append(b, ";w="...)
			b = appendSFInteger(b, w)
		}
		n++
	}
	split := len(b)
	m := 0
	for i := range quotas {
		q := &quotas[i]
		if !q.Known {
			continue
		}
		start := len(b)
		if m > 0 {
			b = append(b, ", "...)
		}
		var ok bool
		if b, ok = appendSFString(b, q.Name); !ok {
			b = b[:start]
			continue
		}
		b = append(b, ";r="...)
		b = appendSFInteger(b, q.Remaining)
		b = append(b, ";t="...)
		b = appendSFInteger(b, ceilSeconds(q.Reset))
		m++
	}
	if n == 0 {
		delete(h, HeaderRateLimitPolicy)
		delete(h, HeaderRateLimit)
		return
	}
	s := string(b)
	vals := make([]string, 2)
	vals[0] = s[:split]
	h[HeaderRateLimitPolicy] = vals[0:1:1]
	if m == 0 {
		delete(h, HeaderRateLimit)
		return
	}
	vals[1] = s[split:]
	h[HeaderRateLimit] = vals[1:2:2]
}
