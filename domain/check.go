package domain

import "fmt"

// Check asks for Cost units of a policy's quota for one subject. The zero
// value is invalid; build one with [NewCheck] or [NewCheckCost].
type Check struct {
	policy Policy
	key    SubjectKey
	cost   int64
}

// NewCheck builds a check with cost 1.
func NewCheck(p Policy, key SubjectKey) Check {
	return Check{policy: p, key: key, cost: 1}
}

// NewCheckCost builds a check that consumes cost units, 1 to the policy's
// limit.
func NewCheckCost(p Policy, key SubjectKey, cost int64) (Check, error) {
	c := Check{policy: p, key: key, cost: cost}
	if err := c.Validate(); err != nil {
		return Check{}, err
	}
	return c, nil
}

// Validate reports whether c has a policy, a subject key and a cost within
// 1..limit. Limiters validate every check; stores may rely on it.
func (c Check) Validate() error {
	switch {
	case c.policy.IsZero():
		return &CheckError{Problem: CheckZeroPolicy}
	case c.key.IsZero():
		return &CheckError{Problem: CheckZeroKey}
	case c.cost < 1 || c.cost > c.policy.limit:
		return &CheckError{Problem: CostOutOfRange, Cost: c.cost, Limit: c.policy.limit}
	}
	return nil
}

// Policy returns the check's policy.
func (c Check) Policy() Policy { return c.policy }

// SubjectKey returns the check's subject key.
func (c Check) SubjectKey() SubjectKey { return c.key }

// Cost returns the units the check consumes when allowed.
func (c Check) Cost() int64 { return c.cost }

// CounterKey returns the key of the counter the check reads and updates.
func (c Check) CounterKey() CounterKey { return NewCounterKey(c.policy.fingerprint, c.key) }

// String describes the check without its subject key.
func (c Check) String() string {
	return fmt.Sprintf("Check{policy: %s, scope: %s, cost: %d, key: %s}",
		c.policy.id.s, c.policy.scope.s, c.cost, redacted)
}

// GoString is String.
func (c Check) GoString() string { return c.String() }

// Format prints c as String does under every verb, so that the key, an
// unexported field, is never printed by reflection.
func (c Check) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }
