package httplimit

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/nilcheck"
	"github.com/runlimit/runlimit/ports"
)

// limit is a validated Limit.
type limit struct {
	policy  domain.Policy
	name    string
	cost    int64
	private bool
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
	case nilcheck.IsNil(cfg.Limiter):
		// A nil *app.Limiter in the interface would fail every request.
		return nil, &ConfigError{Field: "Limiter", Want: "set (a nil pointer is not)"}
	case cfg.Hasher.IsZero():
		return nil, &ConfigError{Field: "Hasher", Want: "a hasher from domain.NewKeyHasher"}
	case len(cfg.Limits) == 0 || len(cfg.Limits) > domain.DefaultMaxBatchSize:
		return nil, &ConfigError{Field: "Limits", Want: fmt.Sprintf("1 to %d limits", domain.DefaultMaxBatchSize)}
	}
	c := &core{limiter: cfg.Limiter, hasher: cfg.Hasher, reject: cfg.Reject, fields: cfg.Fields}
	if c.reject == nil {
		c.reject = DefaultReject
	}
	if nilcheck.IsNil(c.fields) {
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
		c.limits = append(c.limits, limit{policy: p, name: l.Name, cost: l.Cost, private: l.Private})
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

// nameClash returns a *NameClashError for the first limit of c whose name
// a limit of the outer chain has, so that a response never names two
// quotas alike. It runs before anything is checked.
func (c *core) nameClash(outer *Result) error {
	if outer == nil {
		return nil
	}
	for i := range c.limits {
		for r := outer; r != nil; r = r.outer {
			for j := range r.limits {
				if r.limits[j].name == c.limits[i].name {
					return &NameClashError{Name: c.limits[i].name, Limit: i}
				}
			}
		}
	}
	return nil
}

// check builds the check of limit i for subject.
func (c *core) check(i int, subject []byte) domain.Check {
	l := &c.limits[i]
	key := c.hasher.Key(l.policy, subject)
	if l.cost == 1 {
		return domain.NewCheck(l.policy, key)
	}
	// The cost was checked against the limit when the config was.
	ch, _ := domain.NewCheckCost(l.policy, key, l.cost)
	return ch
}

// run checks s.checks as one atomic batch. It writes the rate-limit fields
// and returns the verdict when the request may proceed; otherwise it has
// written the rejection.
//
// A single limit goes through Limiter.Check, the batch of one's own path:
// the same rules, without a pooled batch or a copy of its decisions.
func (c *core) run(w http.ResponseWriter, r *http.Request, s *scratch, outer *Result) (verdict, bool) {
	var v verdict
	var err error
	if len(s.checks) == 1 {
		var d domain.Decision
		d, err = c.limiter.Check(r.Context(), s.checks[0])
		v = verdictOfOne(d)
	} else {
		var bd domain.BatchDecision
		bd, err = c.limiter.CheckAll(r.Context(), s.checks)
		v = verdictOfBatch(bd)
	}
	if err != nil {
		// An error fails closed whatever decision came with it.
		c.refuse(w, r, s, outer, Rejection{Reason: ReasonLimiter, Err: err})
		return verdict{}, false
	}
	if !c.fits(&v) {
		// Not a decision about this batch: it cannot say that every limit
		// has quota, so nothing of it is reported and nothing passes.
		c.refuse(w, r, s, outer, Rejection{Reason: ReasonLimiter, Err: ErrUnknownOutcome})
		return verdict{}, false
	}
	switch v.outcome {
	case domain.Allowed, domain.ShadowDenied:
		s.quotas = outer.appendQuotas(s.quotas[:0])
		s.quotas = appendVerdictQuotas(s.quotas, c.limits, &v)
		sortQuotas(s.quotas)
		c.fields.WriteFields(w.Header(), s.quotas)
		return v, true
	case domain.Denied:
		rej := Rejection{Reason: ReasonQuota, v: v}
		if _, denial, _ := v.denied(); denial.Reason() == domain.StorageCapacity {
			rej.Reason = ReasonCapacity
		}
		c.refuse(w, r, s, outer, rej)
	default:
		c.refuse(w, r, s, outer, Rejection{Reason: ReasonLimiter, Err: ErrUnknownOutcome})
	}
	return verdict{}, false
}

// refuse completes rej with the quotas of every limit checked so far and
// hands it to the RejectFunc.
func (c *core) refuse(w http.ResponseWriter, r *http.Request, s *scratch, outer *Result, rej Rejection) {
	s.quotas = outer.appendQuotas(s.quotas[:0])
	s.quotas = appendVerdictQuotas(s.quotas, c.limits, &rej.v)
	sortQuotas(s.quotas)
	rej.quotas, rej.fields, rej.limits = s.quotas, c.fields, c.limits
	if rej.Reason == ReasonQuota || rej.Reason == ReasonCapacity {
		_, denial, _ := rej.v.denied()
		retry, ok := denial.RetryAfter()
		rej.retry, rej.hasRetry = retryAfterSeconds(s.quotas, retry, ok)
	}
	s.rej = rej
	// A fresh wrapper per refusal, not one kept in s: a RejectFunc that
	// kept w past its call must not write into a later request's response.
	rw := &rejectWriter{w: w, status: s.rej.Status()}
	c.reject(rw, r, &s.rej)
	rw.finish()
}

// fits reports whether v can be the decision about c's limits. The
// limiter is any ports.Limiter, a host's decorator or a remote client as
// well as app.Limiter, and the middleware lets a request through on its
// word: an allowed batch must have one allowed decision per limit, a
// shadow denial needs limits in shadow mode, and a denial or shadow
// denial must name one of the limits. Anything else would let a limit the
// limiter never reported on pass unchecked.
func (c *core) fits(v *verdict) bool {
	switch v.outcome {
	case domain.Allowed:
		if v.many == nil {
			return len(c.limits) == 1
		}
		if len(v.many) != len(c.limits) {
			return false
		}
		for i := range v.many {
			if v.many[i].Outcome() != domain.Allowed {
				return false
			}
		}
		return true
	case domain.ShadowDenied:
		if c.limits[0].policy.Mode() != domain.Shadow {
			return false
		}
		fallthrough
	case domain.Denied:
		if v.index < 0 || v.index >= len(c.limits) {
			return false
		}
		_, ok := v.one.Denial()
		return ok
	}
	// An unknown outcome is refused by run's switch.
	return true
}
