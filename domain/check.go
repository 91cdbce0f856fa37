package domain

import "fmt"

// Check asks for Cost units of a policy's quota for one subject. The zero
// value is invalid; build one with [NewCheck] or [NewCheckCost].
type Check struct {
	policy Policy
	// counter is the policy's fingerprint joined to the subject key, built
	// once here rather than on every admission.
	counter CounterKey
	keySet  bool
	// valid is fixed when the check is built: whether validateCheck
	// accepts it. Fields are unexported and never change afterwards, so
	// every admission path (the limiter, then the store) can validate at
	// the cost of one load.
	valid bool
	cost  int64
}

// NewCheck builds a check with cost 1.
func NewCheck(p Policy, key SubjectKey) Check {
	// Cost 1 is within every policy's limit.
	c := Check{policy: p, keySet: key.set, valid: p.def != nil && key.set, cost: 1}
	if p.def != nil {
		c.counter.join(&p.def.fingerprint, &key)
	} else {
		c.counter.join(&Fingerprint{}, &key)
	}
	return c
}

// NewCheckCost builds a check that consumes cost units, 1 to the policy's
// limit.
func NewCheckCost(p Policy, key SubjectKey, cost int64) (Check, error) {
	c := NewCheck(p, key)
	c.cost = cost
	if err := c.problem(); err != nil {
		return Check{}, err
	}
	return c, nil
}

// Validate reports whether c has a policy, a subject key and a cost within
// 1..limit. Limiters validate every check; stores may rely on it.
func (c Check) Validate() error { return c.validate() }

// ValidateCheck is [Check.Validate] for a check held by pointer, as the
// admission paths hold the check they were given; a nil c is the zero
// check. Validate's value receiver costs a copy of the whole check, more
// than the validation itself.
func ValidateCheck(c *Check) error {
	if c != nil && c.valid {
		return nil
	}
	return checkProblem(c)
}

func (c *Check) validate() error {
	if c.valid {
		return nil
	}
	return checkProblem(c)
}

// checkProblem is the slow path of ValidateCheck, kept out of line.
//
//go:noinline
func checkProblem(c *Check) error {
	if c == nil {
		return &CheckError{Problem: CheckZeroPolicy}
	}
	return c.problem()
}

// problem applies the rules valid caches and names the first one c breaks.
func (c *Check) problem() error {
	switch {
	case c.policy.IsZero():
		return &CheckError{Problem: CheckZeroPolicy}
	case !c.keySet:
		return &CheckError{Problem: CheckZeroKey}
	case c.cost < 1 || c.cost > c.policy.def.limit:
		return &CheckError{Problem: CostOutOfRange, Cost: c.cost, Limit: c.policy.def.limit}
	}
	return nil
}

// Policy returns the check's policy.
func (c Check) Policy() Policy { return c.policy }

// SubjectKey returns the check's subject key.
func (c Check) SubjectKey() SubjectKey {
	if !c.keySet {
		return SubjectKey{}
	}
	return c.counter.SubjectKey()
}

// Cost returns the units the check consumes when allowed.
func (c Check) Cost() int64 { return c.cost }

// CounterKey returns the key of the counter the check reads and updates.
func (c Check) CounterKey() CounterKey { return c.counter }

// String describes the check without its subject key.
func (c Check) String() string {
	return fmt.Sprintf("Check{policy: %s, scope: %s, cost: %d, key: %s}",
		c.policy.ID().s, c.policy.Scope().s, c.cost, redacted)
}

// GoString is String.
func (c Check) GoString() string { return c.String() }

// Format prints c as String does under every verb, so that the key, an
// unexported field, is never printed by reflection.
func (c Check) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }
