package domain

import "time"

// ParsePolicy validates a policy whose identifiers are given as strings, as
// configuration usually holds them. It reports the first error in the order
// policy id, scope id, limit, window.
func ParsePolicy(id, scope string, limit int64, window time.Duration) (Policy, error) {
	policyID, err := NewPolicyID(id)
	if err != nil {
		return Policy{}, err
	}
	scopeID, err := NewScopeID(scope)
	if err != nil {
		return Policy{}, err
	}
	return NewPolicy(policyID, scopeID, limit, window)
}

// MustPolicy is [ParsePolicy] for policies fixed at compile time, such as
// package-level variables. It panics on invalid input.
func MustPolicy(id, scope string, limit int64, window time.Duration) Policy {
	p, err := ParsePolicy(id, scope, limit, window)
	if err != nil {
		panic(err)
	}
	return p
}
