package domain_test

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// Build policies from validated identifiers; every mistake is a typed error
// that says what is wrong, before any store is involved.
func ExampleNewPolicy() {
	id, err := domain.NewPolicyID("auth.login")
	if err != nil {
		panic(err)
	}
	scope, err := domain.NewScopeID("identity")
	if err != nil {
		panic(err)
	}
	policy, err := domain.NewPolicy(id, scope, 8, time.Minute)
	if err != nil {
		panic(err)
	}
	fmt.Println(policy)

	// ParsePolicy does the same from strings; watch a new policy in shadow
	// mode before enforcing it (the same counters either way).
	shadow, _ := domain.MustPolicy("auth.signup", "network", 20, time.Hour).WithMode(domain.Shadow)
	fmt.Println(shadow.Mode(), shadow.Limit(), shadow.Window())

	_, err = domain.ParsePolicy("auth login", "identity", 8, time.Minute)
	fmt.Println(err)
	_, err = domain.ParsePolicy("auth.login", "identity", 8, 1500*time.Microsecond)
	fmt.Println(err)
	var pe *domain.PolicyError
	fmt.Println(errors.As(err, &pe), errors.Is(err, domain.ErrInvalidInput))
	// Output:
	// auth.login/identity: 8 per 1m0s (enforce)
	// shadow 20 1h0m0s
	// runlimit: invalid policy id: byte offset 4 is not an ASCII letter, digit or one of - . _ : /
	// runlimit: invalid policy: window 1.5ms is not a whole number of milliseconds
	// true true
}

// Derive subject keys: stores, logs and metrics see a keyed HMAC of the
// subject, never the subject, and the same secret derives the same key on
// every replica.
func ExampleKeyHasher() {
	// Load a stable, random secret of at least 32 bytes from secret storage.
	hasher, err := domain.NewKeyHasher([]byte("example-only-secret-of-32-bytes!"))
	if err != nil {
		panic(err)
	}
	identity := domain.MustPolicy("auth.login", "identity", 8, time.Minute)
	client := domain.MustPolicy("auth.login", "client", 40, time.Minute)

	a := hasher.KeyString(identity, "user@example.test")
	b := hasher.Key(identity, []byte("user@example.test"))
	c := hasher.KeyString(client, "user@example.test")
	ab, bb, cb := a.Bytes(), b.Bytes(), c.Bytes()
	fmt.Println("same subject, same policy, same key:", ab == bb)
	fmt.Println("another scope, another key:", !bytes.Equal(ab[:], cb[:]))
	fmt.Println("printed:", a, hasher)

	_, err = domain.NewKeyHasher([]byte("too short"))
	fmt.Println(err)
	// Output:
	// same subject, same policy, same key: true
	// another scope, another key: true
	// printed: SubjectKey[redacted] KeyHasher[redacted]
	// runlimit: invalid input: key secret must be at least 32 bytes
}

// Read a decision: allowed with what remains, or denied with when to retry.
// Here the domain evaluates a check by itself, at store times 0 s and
// 10.5 s, as a store does under its locks.
func ExampleDecision() {
	hasher, _ := domain.NewKeyHasher([]byte("example-only-secret-of-32-bytes!"))
	policy := domain.MustPolicy("auth.login", "identity", 1, time.Minute)
	check := domain.NewCheck(policy, hasher.KeyString(policy, "user@example.test"))

	var (
		stored   domain.Counter
		decision domain.Decision
	)
	for _, at := range []time.Duration{0, 10500 * time.Millisecond} {
		obs := domain.Observation{Counter: stored}
		var next domain.Counter
		commit, err := domain.EvaluateCheck(&check, domain.InstantOf(at), &obs, &next, &decision)
		if err != nil {
			panic(err)
		}
		if commit {
			stored = next // a store persists the new counter only on commit
		}

		fmt.Printf("at %v: %s, permits the request: %t\n", at, decision.Outcome(), decision.PermitsRequest())
		if a, ok := decision.Allowance(); ok {
			fmt.Printf("  limit %d, remaining %d, resets after %v\n", a.Limit, a.Remaining, a.ResetAfter)
		}
		if d, ok := decision.Denial(); ok {
			exact, _ := d.RetryAfter()
			seconds, _ := d.RetryAfterSeconds() // rounded up, for Retry-After
			fmt.Printf("  reason %s, retry after %v (%d s)\n", d.Reason(), exact, seconds)
		}
	}
	// Output:
	// at 0s: allowed, permits the request: true
	//   limit 1, remaining 0, resets after 1m0s
	// at 10.5s: denied, permits the request: false
	//   reason quota, retry after 49.5s (50 s)
}
