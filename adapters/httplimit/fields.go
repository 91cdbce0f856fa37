package httplimit

import "net/http"

// FieldWriter writes the rate-limit fields of a response from the quotas of
// the policies checked for its request, most restrictive first by their
// live state, the order [Rejection.Quotas] has. That order changes from one
// response to the next as the counts move: a field that describes the
// policies rather than their state, such as RateLimit-Policy, must be
// written in an order of its own that does not depend on the counts, as
// [Draft11] does. Each
// version of the RateLimit fields draft is one implementation, so that a
// later draft can sit beside [Draft11] and a host can choose, or write both.
//
// WriteFields replaces the fields it owns in h; it is called again, with
// more quotas, when a [Guard] adds its checks after a [Middleware]. It must
// not retain quotas.
type FieldWriter interface {
	WriteFields(h http.Header, quotas []Quota)
}

// FieldWriterFunc adapts a function to a [FieldWriter].
type FieldWriterFunc func(h http.Header, quotas []Quota)

// WriteFields calls f.
// A nil f writes nothing.
func (f FieldWriterFunc) WriteFields(h http.Header, quotas []Quota) {
	if f != nil {
		f(h, quotas)
	}
}
