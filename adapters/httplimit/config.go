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
