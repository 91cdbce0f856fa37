package httplimit

import (
	"errors"
	"fmt"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// Sentinels matched with errors.Is. No error of this package holds a
// subject, an address, a header value or a key.
var (
	// ErrInvalidConfig is matched by every [*ConfigError]. It is
	// [ports.ErrInvalidConfig], the contract every constructor shares.
	ErrInvalidConfig = ports.ErrInvalidConfig
	// ErrInvalidIdentity is matched by every [*IdentityError]. It matches
	// [domain.ErrInvalidInput]: the identity is refused before any check,
	// so [ports.MayHaveConsumedQuota] says nothing was consumed.
	ErrInvalidIdentity = fmt.Errorf("%w: httplimit: invalid identity", domain.ErrInvalidInput)
	// ErrRemoteAddr: the request's RemoteAddr is not an IP address and
	// port, so the client cannot be counted and the request is refused
	// before any check. A nil request has none either. It matches
	// [domain.ErrInvalidInput].
	ErrRemoteAddr = fmt.Errorf("%w: httplimit: request has no usable remote address", domain.ErrInvalidInput)
	// ErrForwarding is matched by every [*ForwardingError]. The request is
	// refused before any check; it matches [domain.ErrInvalidInput].
	ErrForwarding = fmt.Errorf("%w: httplimit: untrustworthy forwarding header", domain.ErrInvalidInput)
	// ErrUnknownOutcome: the limiter returned a decision that is neither
	// allowed, denied nor shadow-denied, or one that does not fit the
	// batch: an allowed batch without one allowed decision per limit, a
	// shadow denial of limits in enforce mode, a denial of a limit the
	// batch does not have. The request is refused.
	ErrUnknownOutcome = errors.New("httplimit: limiter returned no decision")
	// ErrSubjectCount: [Guard.Admit] was given a different number of
	// subjects than the guard has limits. The request is refused before
	// any check. It matches [domain.ErrInvalidInput].
	ErrSubjectCount = fmt.Errorf("%w: httplimit: one subject per limit is required", domain.ErrInvalidInput)
	// ErrNilHandler: [Middleware.Handler] was given a nil handler, so an
	// admitted request would have nowhere to go. Every request is refused
	// before any check, with 503 Service Unavailable. It matches
	// [domain.ErrInvalidInput].
	ErrNilHandler = fmt.Errorf("%w: httplimit: Middleware.Handler was given a nil handler", domain.ErrInvalidInput)
	// ErrNotBuilt is matched by the refusal of a nil or zero [Middleware]
	// or [Guard], which [NewMiddleware] or [NewGuard] did not build: it
	// has no limiter, so it fails closed with 503 Service Unavailable. It
	// is [ports.ErrNotBuilt].
	ErrNotBuilt = ports.ErrNotBuilt
	// ErrNilRequest: a nil *http.Request reached a [Middleware] or a
	// [Guard]. It is refused with 503 Service Unavailable, before any
	// check. It matches [domain.ErrInvalidInput]. (A key function such as
	// [RemoteNetwork] answers a nil request with [ErrRemoteAddr].)
	ErrNilRequest = fmt.Errorf("%w: httplimit: nil *http.Request", domain.ErrInvalidInput)
	// ErrNameClash is matched by every [*NameClashError].
	ErrNameClash = errors.New("httplimit: a limit's name is also an enclosing limit's")
	// ErrInvalidSubject is matched by every [*SubjectError]: a key
	// function returned, or a Guard was given, an empty subject or one
	// longer than [MaxSubjectLength]. The request is refused before any
	// check; it matches [domain.ErrInvalidInput].
	ErrInvalidSubject = fmt.Errorf("%w: httplimit: invalid subject", domain.ErrInvalidInput)
)

// ConfigError reports a [Config], [Limit] or [ClientConfig] field outside its
// bounds. It unwraps to [ErrInvalidConfig].
type ConfigError struct {
	Field string // the field, such as "Limits[1].Name"
	Want  string // what it must be
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("httplimit: invalid config: %s must be %s", e.Field, e.Want)
}

// Unwrap returns [ErrInvalidConfig].
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// ForwardingProblem says why a forwarding header could not be believed.
type ForwardingProblem uint8

// Forwarding problems.
const (
	// ForwardingMalformed: an entry a trusted proxy must have written does
	// not parse.
	ForwardingMalformed ForwardingProblem = iota + 1
	// ForwardingUnknown: a trusted proxy wrote "unknown" or an obfuscated
	// identifier (RFC 7239 section 6) where the client should be.
	ForwardingUnknown
	// ForwardingTooManyHops: the header names more trusted proxies than
	// [ClientConfig.MaxHops].
	ForwardingTooManyHops
	// ForwardingAmbiguous: the request's header map holds the header
	// under two spellings, such as "X-Forwarded-For" and
	// "x-forwarded-for", so the order of its lines is unknown. net/http
	// never builds such a map; code that fills one by hand can. Hop is 0.
	ForwardingAmbiguous
)

// ForwardingError reports a Forwarded or X-Forwarded-For header that a
// trusted proxy sent but that does not name the client. Hop counts entries
// from the right, starting at 1 for the one the nearest proxy added. It
// never holds the header's text.
type ForwardingError struct {
	Header  string // "Forwarded" or "X-Forwarded-For"
	Problem ForwardingProblem
	Hop     int
}

func (e *ForwardingError) Error() string {
	switch e.Problem {
	case ForwardingUnknown:
		return fmt.Sprintf("httplimit: %s hop %d from the right does not name an address", e.Header, e.Hop)
	case ForwardingTooManyHops:
		return fmt.Sprintf("httplimit: %s hop %d from the right is one trusted proxy more than MaxHops", e.Header, e.Hop)
	case ForwardingAmbiguous:
		return fmt.Sprintf("httplimit: %s is in the request's header map under more than one spelling", e.Header)
	default:
		return fmt.Sprintf("httplimit: %s hop %d from the right is malformed", e.Header, e.Hop)
	}
}

// Unwrap returns [ErrForwarding].
func (e *ForwardingError) Unwrap() error { return ErrForwarding }

// SubjectError reports a subject a [Middleware] or [Guard] refuses to
// count: an empty one, which every request whose key function found
// nothing would share, so that one client could use up the quota of all
// of them, or one longer than [MaxSubjectLength]. The request is refused
// with [ReasonKey] before any check. It names the length, never the
// subject.
type SubjectError struct {
	// Index is the subject's position among [Guard.Admit]'s subjects, 0
	// for a Middleware's key function.
	Index  int
	Length int // the subject's length in bytes
}

func (e *SubjectError) Error() string {
	if e.Length == 0 {
		return fmt.Sprintf("httplimit: subject %d is empty", e.Index)
	}
	return fmt.Sprintf("httplimit: subject %d is %d bytes long, at most %d allowed", e.Index, e.Length, MaxSubjectLength)
}

// Unwrap returns [ErrInvalidSubject].
func (e *SubjectError) Unwrap() error { return ErrInvalidSubject }

// NameClashError reports a [Middleware] or [Guard] with a limit whose
// field name is also the name of a limit of a Middleware or Guard around
// it for the same request (its [Result] in the request's context), such as
// two layers that each count policy "api" in scope "client" under the
// default name "api/client". A client could not tell the two items of the
// RateLimit fields apart, so the inner layer refuses every such request
// before it checks anything, as a failure ([ReasonLimiter], 503 by
// [DefaultReject]): set [Limit.Name] on one of them. Nothing was consumed
// by the inner layer.
//
// Name is a configured field name, which every response shows clients;
// the error holds no subject, key or request data.
type NameClashError struct {
	Name  string // the field name both limits have
	Limit int    // the index of the inner layer's limit in its Config.Limits
}

func (e *NameClashError) Error() string {
	return fmt.Sprintf("httplimit: Limits[%d].Name %q is also the name of a limit of an enclosing Middleware or Guard; give one a distinct Limit.Name", e.Limit, e.Name)
}

// Unwrap returns [ErrNameClash].
func (e *NameClashError) Unwrap() error { return ErrNameClash }

// MayHaveConsumedQuota returns false: the clash is found before the layer
// checks any limit (see [ports.MayHaveConsumedQuota]).
func (e *NameClashError) MayHaveConsumedQuota() bool { return false }
