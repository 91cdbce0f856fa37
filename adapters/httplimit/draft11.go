package httplimit

import (
	"cmp"
	"math/bits"
	"net/http"
)

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
//	RateLimit-Policy: "auth.login/identity";q=8;w=60, "auth.login/client";q=40;w=60
//	RateLimit: "auth.login/identity";r=0;t=37, "auth.login/client";r=39;t=60
//
// RateLimit-Policy names every quota with the requests its window admits
// (q) and its window in whole seconds, rounded up (w); RateLimit names
// every known quota with the requests left (r, 0 for a quota or shadow
// denial) and the seconds until its window ends, rounded up (t).
//
// Both count requests, the draft's default quota unit (no qu parameter
// is written): a limit whose requests cost more than one unit
// ([Limit.Cost]) shows its limit and remaining units divided by the
// cost, rounded down, so that a client never reads r=1 where one unit is
// left and a request needs two.
//
// RateLimit keeps the order the quotas are given in, most restrictive
// first by their live state. RateLimit-Policy does not: it describes the
// policies, so one client sees the same field on every response however
// the counts move. Its order is fixed by configuration alone, most
// restrictive first by rate: fewest requests (Limit / Cost) per second of
// window; at equal rates fewest requests per window; then by name, byte
// by byte, which is unique within a response. A quota without a window
// comes last.
//
// Integers above 999,999,999,999,999 are written as that bound. A quota
// whose name an sf-string cannot carry is left out, so that no byte
// outside printable ASCII reaches a header, and so is a quota whose name
// an earlier quota of the slice already has, so that a client never sees
// one name twice. A field with no item is removed.
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
	var orderBuf [32]int
	n := 0
	for _, i := range policyOrder(orderBuf[:0], quotas) {
		q := &quotas[i]
		if repeatsName(quotas, i) {
			continue
		}
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
		b = appendSFInteger(b, int64(perWindow(q)))
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
		if !q.Known || repeatsName(quotas, i) {
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
		b = appendSFInteger(b, requestsLeft(*q))
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

// policyOrder appends to dst the indexes of quotas in RateLimit-Policy's
// order: the order of [comparePolicies], ties (one name twice) in the
// order given. An insertion sort: a response has a handful of quotas, and
// dst can live on the caller's stack.
func policyOrder(dst []int, quotas []Quota) []int {
	for i := range quotas {
		dst = append(dst, i)
		j := len(dst) - 1
		for j > 0 && comparePolicies(&quotas[i], &quotas[dst[j-1]]) < 0 {
			dst[j] = dst[j-1]
			j--
		}
		dst[j] = i
	}
	return dst
}

// comparePolicies orders two quotas by what they are configured to allow,
// never by their state: fewest requests per second of window first, then
// fewest requests per window, then by name. A quota without a positive
// window has no rate and comes after every quota with one.
func comparePolicies(a, b *Quota) int {
	ra, rb := perWindow(a), perWindow(b)
	wa, wb := a.Window > 0, b.Window > 0
	switch {
	case wa && !wb:
		return -1
	case !wa && wb:
		return 1
	case wa && wb:
		// ra/Wa against rb/Wb, cross-multiplied in 128 bits: both sides
		// are non-negative and below 2^63, so nothing overflows.
		hiA, loA := bits.Mul64(ra, uint64(b.Window))
		hiB, loB := bits.Mul64(rb, uint64(a.Window))
		if c := cmp.Compare(hiA, hiB); c != 0 {
			return c
		}
		if c := cmp.Compare(loA, loB); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(ra, rb); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// perWindow is the number of requests q's window admits; a negative limit
// admits none, and a cost below one is read as one.
func perWindow(q *Quota) uint64 {
	return uint64(max(q.Limit, 0) / max(q.Cost, 1))
}

// repeatsName reports whether a quota before quotas[i] has its name.
func repeatsName(quotas []Quota, i int) bool {
	for j := range i {
		if quotas[j].Name == quotas[i].Name {
			return true
		}
	}
	return false
}
