package domain

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// Check asks for Cost units of a policy's quota for one subject. The zero
// value is invalid; build one with [NewCheck] or [NewCheckCost].
type Check struct {
	// key comes first: hosts copy a check by value at every layer down to
	// the store, in 16-byte moves, and a store reads the key's 32 bytes in
	// 16-byte loads; at offset 0 each load reads back exactly one earlier
	// store, which a processor forwards without waiting for the cache.
	key SubjectKey
	// mode and def are the check's Policy, held apart so that the struct
	// packs into 64 bytes: copies of up to 64 bytes are a few moves where
	// larger ones are a loop. The counter key is joined from the policy's
	// fingerprint when a store asks for it.
	mode Mode
	// valid is fixed when the check is built: whether validateCheck
	// accepts it. Fields are unexported and never change afterwards, so
	// every admission path (the limiter, then the store) can validate at
	// the cost of one load.
	valid bool
	def   *policyDef
	cost  int64
	// The pad makes a check exactly four 16-byte moves. At 56 bytes the
	// compiler copies the last 24 in two overlapping moves, and a later
	// copy's load of bytes 32 to 47 then needs two earlier stores at once,
	// which no processor forwards: it waits for the cache.
	_ [8]byte
}

// NewCheck builds a check with cost 1.
func NewCheck(p Policy, key SubjectKey) Check {
	// Cost 1 is within every policy's limit.
	return Check{def: p.def, key: key, mode: p.mode, valid: p.def != nil && key.set, cost: 1}
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
	case c.def == nil:
		return &CheckError{Problem: CheckZeroPolicy}
	case !c.key.set:
		return &CheckError{Problem: CheckZeroKey}
	case c.cost < 1 || c.cost > c.def.limit:
		return &CheckError{Problem: CostOutOfRange, Cost: c.cost, Limit: c.def.limit}
	}
	return nil
}

// Policy returns the check's policy.
func (c Check) Policy() Policy { return Policy{def: c.def, mode: c.mode} }

// SubjectKey returns the check's subject key.
func (c Check) SubjectKey() SubjectKey { return c.key }

// Cost returns the units the check consumes when allowed.
func (c Check) Cost() int64 { return c.cost }

// CounterKey returns the key of the counter the check reads and updates.
func (c Check) CounterKey() CounterKey { return c.counterKey() }

// CounterKeyHash64 returns c.CounterKey().Hash64() without building the
// 64-byte key: a store's single-check path reads it on every admission.
func (c *Check) CounterKeyHash64() uint64 {
	var fp uint64
	if c.def != nil {
		fp = binary.LittleEndian.Uint64(c.def.fingerprint[0:8])
	}
	return fp ^ binary.LittleEndian.Uint64(c.key.masked[0:8])
}

// HasCounterKey reports whether k is c's counter key, as c.CounterKey() ==
// *k does, without building the key: a store's single-check path compares
// it with the key it stored on every admission. Only equality is read,
// never a byte's value.
func (c *Check) HasCounterKey(k *CounterKey) bool {
	fp := &zeroWords
	if c.def != nil {
		fp = words((*[32]byte)(&c.def.fingerprint))
	}
	return *fp == *words((*[32]byte)(&k.fp)) && *words(&c.key.masked) == *words(&k.sub)
}

// words views 32 bytes as the four words == compares in line (on an array
// of 32 bytes, == calls the runtime's memequal). Every array it is given is
// aligned as a uint64: the checks below fail to compile otherwise.
func words(b *[32]byte) *[4]uint64 { return (*[4]uint64)(unsafe.Pointer(b)) }

var zeroWords [4]uint64

// A counter key's halves, a check's subject key and a policy's fingerprint
// start on a word boundary, as words assumes (a CounterKey and a Check are
// aligned as a uint64 is, and so is a policyDef, which holds one).
var (
	_ = [1]struct{}{}[unsafe.Offsetof(CounterKey{}.sub)%8]
	_ = [1]struct{}{}[unsafe.Offsetof(Check{}.key)%8+unsafe.Offsetof(SubjectKey{}.masked)%8]
	_ = [1]struct{}{}[unsafe.Offsetof(policyDef{}.fingerprint)%8]
	_ = [1]struct{}{}[unsafe.Alignof(Check{})-8]
)

// counterKey joins the policy's fingerprint (zero without a policy) to the
// subject key.
func (c *Check) counterKey() CounterKey {
	var k CounterKey
	if c.def != nil {
		k.join(&c.def.fingerprint, &c.key)
	} else {
		k.join(&Fingerprint{}, &c.key)
	}
	return k
}

// sameCounter reports whether the valid checks c and o update one counter:
// the same subject key under the same fingerprint.
func (c *Check) sameCounter(o *Check) bool {
	return c.key.masked == o.key.masked && (c.def == o.def || c.def.fingerprint == o.def.fingerprint)
}

// String describes the check without its subject key.
func (c Check) String() string {
	return fmt.Sprintf("Check{policy: %s, scope: %s, cost: %d, key: %s}",
		c.Policy().ID().s, c.Policy().Scope().s, c.cost, redacted)
}

// GoString is String.
func (c Check) GoString() string { return c.String() }

// Format prints c as String does under every verb, so that the key, an
// unexported field, is never printed by reflection.
func (c Check) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }
