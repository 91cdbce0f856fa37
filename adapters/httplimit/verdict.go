package httplimit

import "github.com/runlimit/runlimit/domain"

// verdict is what the limiter decided for one request's limits, whether
// they went through Limiter.Check (a single limit) or CheckAll: the
// decision of each limit when allowed; otherwise the index and decision
// of the limit that denied or shadow-denied. It holds one decision inline
// so that the single-check path needs no slice.
type verdict struct {
	outcome domain.Outcome
	index   int             // the failing limit, when not allowed
	one     domain.Decision // the only limit's decision, or the failing one's
	many    []domain.Decision
}

func verdictOfOne(d domain.Decision) verdict {
	return verdict{outcome: d.Outcome(), one: d}
}

func verdictOfBatch(bd domain.BatchDecision) verdict {
	v := verdict{outcome: bd.Outcome()}
	switch v.outcome {
	case domain.Allowed:
		v.many = bd.Decisions()
	case domain.Denied, domain.ShadowDenied:
		i, _, _ := bd.Denied()
		v.index = i
		v.one, _ = bd.Decision(i)
	}
	return v
}

// decision returns limit i's decision, when the limiter reported one.
func (v *verdict) decision(i int) (domain.Decision, bool) {
	switch {
	case v.outcome == domain.Allowed && v.many != nil:
		if i >= 0 && i < len(v.many) {
			return v.many[i], true
		}
	case v.outcome == domain.Allowed:
		return v.one, i == 0
	case v.outcome == domain.Denied || v.outcome == domain.ShadowDenied:
		return v.one, i == v.index
	}
	return domain.Decision{}, false
}

// denied returns the failing limit's index and denial.
func (v *verdict) denied() (int, domain.Denial, bool) {
	if v.outcome != domain.Denied && v.outcome != domain.ShadowDenied {
		return 0, domain.Denial{}, false
	}
	d, ok := v.one.Denial()
	return v.index, d, ok
}
