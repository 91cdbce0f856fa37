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
	cost    int64
}

// NewCheck builds a check with cost 1.
func NewCheck(p Policy, key SubjectKey) Check {
	c := Check{policy: p, keySet: key.set, cost: 1}
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
	if err := c.validate(); err != nil {
		return Check{}, err
	}
	return c, nil
}

// Validate reports whether c has a policy, a subject key and a cost within
// 1..limit. Limiters validate every check; stores may rely on it.
func (c Check) Validate() error { return c.validate() }

func (c *Check) validate() error {
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
