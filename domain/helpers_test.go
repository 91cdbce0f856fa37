package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// testSecret is 36 recognisable bytes; redaction tests look for them. It
// holds no run of digits: a pointer or a number printed by some verb would
// spell one by chance (a pointer printed with %o spelled "012345" and failed
// the leak test here).
var testSecret = []byte("test-secret:Qk7#zv9!wP2^mX4&!!!!")

// fixture is the small bundle most domain tests start from.
type fixture struct {
	hasher domain.KeyHasher
	// policy allows 5 units per second: auth.login / identity.
	policy domain.Policy
}

func setup(t testing.TB) fixture {
	t.Helper()
	hasher, err := domain.NewKeyHasher(testSecret)
	require.NoError(t, err)
	return fixture{hasher: hasher, policy: newPolicy(t, "auth.login", "identity", 5, time.Second)}
}

// key derives the subject key of subject under the fixture's policy.
func (f fixture) key(subject string) domain.SubjectKey {
	return f.hasher.KeyString(f.policy, subject)
}

// check builds a cost-1 check of the fixture's policy for subject.
func (f fixture) check(subject string) domain.Check {
	return domain.NewCheck(f.policy, f.key(subject))
}

func newPolicy(t testing.TB, id, scope string, limit int64, window time.Duration) domain.Policy {
	t.Helper()
	pid, err := domain.NewPolicyID(id)
	require.NoError(t, err)
	sid, err := domain.NewScopeID(scope)
	require.NoError(t, err)
	p, err := domain.NewPolicy(pid, sid, limit, window)
	require.NoError(t, err)
	return p
}

func withMode(t testing.TB, p domain.Policy, mode domain.Mode) domain.Policy {
	t.Helper()
	p, err := p.WithMode(mode)
	require.NoError(t, err)
	return p
}

func newBatch(t testing.TB, checks ...domain.Check) *domain.Batch {
	t.Helper()
	b, err := domain.NewBatch(checks, 0)
	require.NoError(t, err)
	return b
}

// ms is a number of milliseconds as an Instant offset, to keep tables short.
func ms(n int64) domain.Instant { return domain.Instant(n * 1000) }
