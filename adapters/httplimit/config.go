package httplimit

import (
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// Limit is one policy a [Middleware] or [Guard] checks for every request.
type Limit struct {
	// Policy is the policy to check. Required.
	Policy domain.Policy
	// Name names the policy in the RateLimit and RateLimit-Policy fields:
	// 1 to 128 bytes of printable ASCII, unique within a Config and among
	// the limits of every Middleware and Guard one request passes through:
	// a layer whose limit has an enclosing layer's name refuses every
	// request with a [*NameClashError]. Clients
	// see it, so it must not say more about the service than you want
	// them to know. Default: the policy id and scope joined by "/", such as
	// "auth.login/client".
	Name string
	// Cost is the units of quota one request consumes, 1 to the policy's
	// limit. The fields count this limit's requests: its limit and
	// remaining units divided by Cost. Default 1.
	Cost int64
	// Private keeps this limit's state, the requests left and the time
	// until its window ends, out of every response unless this limit
	// itself denied the request. Set it for a limit whose subject is not
	// the client's own, such as the identity of a login: the RateLimit
	// field would otherwise tell any client how many attempts anyone made
	// on that identity in the current window, and when the first one was.
	// A denial shows r=0 and its Retry-After, as the refusal itself
	// reveals the lockout; a shadow denial, which refuses nothing, shows
	// nothing. RateLimit-Policy still describes the limit (q and w), which
	// depends on configuration alone. The state is hidden from the
	// [FieldWriter] and from [Rejection.Quotas], and never raises another
	// limit's Retry-After; the handler still reads it, for itself, with
	// [Result.Decision]. Default false: the state of a limit keyed on the
	// client's own network or credential is what the fields are for.
	Private bool
}

// Config configures a [Middleware] or a [Guard].
type Config struct {
	// Limiter checks the limits; app.Limiter is one. Required.
	Limiter ports.Limiter
	// Hasher derives each limit's key from the subject, so that neither
	// the limiter nor anything this package prints ever holds a subject.
	// Required.
	Hasher domain.KeyHasher
	// Limits are checked as one atomic batch (Limiter.CheckAll; a single
	// limit through Limiter.Check, a batch of one): the request is admitted
	// only if every limit has quota left, and then each is consumed. 1 to
	// 32 limits, all in the same quota mode, of distinct policies.
	// Required.
	Limits []Limit
	// Key derives the subject of a request. Required by NewMiddleware; a
	// Guard takes its subjects from the handler and refuses a Key.
	Key KeyFunc
	// Reject writes the response to a refused request. Default
	// [DefaultReject].
	Reject RejectFunc
	// Fields writes the rate-limit fields of every response the limits
	// decide. Default [Draft11].
	Fields FieldWriter
}
