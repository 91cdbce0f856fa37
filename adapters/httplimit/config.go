package httplimit

import (
	"fmt"
	"sync"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// Limit is one policy a [Middleware] or [Guard] checks for every request.
type Limit struct {
	// Policy is the policy to check. Required.
	Policy domain.Policy
	// Name names the policy in the RateLimit and RateLimit-Policy fields:
	// 1 to 128 bytes of printable ASCII, unique within a Config. Clients
	// see it, so it must not say more about the service than you want
	// them to know. Default: the policy id and scope joined by "/", such as
	// "auth.login/client".
	Name string
	// Cost is the units of quota one request consumes, 1 to the policy's
	// limit. Default 1.
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

// limit is a validated Limit.
type limit struct {
	policy domain.Policy
	name   string
	cost   int64
}

// core is what a Middleware and a Guard share: validated limits and the
// one flow that checks them and answers the request.
type core struct {
	limiter ports.Limiter
	hasher  domain.KeyHasher
	limits  []limit
	reject  RejectFunc
	fields  FieldWriter
	scratch sync.Pool // *scratch
}

// scratch is one request's working memory, reused across requests so that
// the admitted path allocates only what outlives the check.
type scratch struct {
	subject []byte
	checks  []domain.Check
	quotas  []Quota
	rej     Rejection
}

func newCore(cfg Config) (*core, error) {
	switch {
	case cfg.Limiter == nil:
		return nil, &ConfigError{Field: "Limiter", Want: "set"}
	case cfg.Hasher.IsZero():
		return nil, &ConfigError{Field: "Hasher", Want: "a hasher from domain.NewKeyHasher"}
	case len(cfg.Limits) == 0 || len(cfg.Limits) > domain.DefaultMaxBatchSize:
		return nil, &ConfigError{Field: "Limits", Want: fmt.Sprintf("1 to %d limits", domain.DefaultMaxBatchSize)}
	}
	c := &core{limiter: cfg.Limiter, hasher: cfg.Hasher, reject: cfg.Reject, fields: cfg.Fields}
	if c.reject == nil {
		c.reject = DefaultReject
	}
	if c.fields == nil {
		c.fields = Draft11{}
	}
	for i, l := range cfg.Limits {
		field := func(name string) string { return fmt.Sprintf("Limits[%d]%s", i, name) }
		p := l.Policy
		if p.IsZero() {
			return nil, &ConfigError{Field: field(".Policy"), Want: "a policy from domain.NewPolicy"}
		}
		if l.Name == "" {
			l.Name = p.ID().String() + "/" + p.Scope().String()
		}
		if bad, ok := validName(l.Name); !ok {
			want := fmt.Sprintf("1 to %d bytes of printable ASCII", MaxNameLength)
			if bad >= 0 {
				want += fmt.Sprintf(" (byte %d is not)", bad)
			}
			return nil, &ConfigError{Field: field(".Name"), Want: want}
		}
		switch {
		case l.Cost == 0:
			l.Cost = 1
		case l.Cost < 0 || l.Cost > p.Limit():
			return nil, &ConfigError{Field: field(".Cost"), Want: fmt.Sprintf("1 to the policy's limit %d", p.Limit())}
		}
		for j, prev := range c.limits {
			switch {
			case prev.policy.Mode() != p.Mode():
				return nil, &ConfigError{Field: field(".Policy"), Want: fmt.Sprintf("in the mode of Limits[0] (%s): a batch cannot mix modes", c.limits[0].policy.Mode())}
			case prev.policy.Fingerprint() == p.Fingerprint():
				return nil, &ConfigError{Field: field(".Policy"), Want: fmt.Sprintf("a different policy from Limits[%d]: one subject would be counted twice", j)}
			case prev.name == l.Name:
				return nil, &ConfigError{Field: field(".Name"), Want: fmt.Sprintf("different from Limits[%d].Name", j)}
			}
		}
		c.limits = append(c.limits, limit{policy: p, name: l.Name, cost: l.Cost})
	}
	n := len(c.limits)
	c.scratch.New = func() any {
		return &scratch{
			subject: make([]byte, 0, 64),
			checks:  make([]domain.Check, n),
			quotas:  make([]Quota, 0, 2*n),
		}
	}
	return c, nil
}

func (c *core) getScratch() *scratch { return c.scratch.Get().(*scratch) }

// putScratch wipes what the request left and returns s to the pool. The
// subject is cleared so that no request's subject outlives it in memory
// the next request reads.
func (c *core) putScratch(s *scratch) {
	// The key function appended into the buffer's spare capacity, beyond
	// its zero length: clear all of it.
	// A subject that outgrew the buffer lives in a slice the key function
	// returned, which this package does not own and leaves alone.
	clear(s.subject[:cap(s.subject)])
	clear(s.checks)
	clear(s.quotas)
	s.quotas = s.quotas[:0]
	s.rej = Rejection{}
	c.scratch.Put(s)
}
