package domain_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

func TestNewCheck(t *testing.T) {
	t.Parallel()
	f := setup(t)

	key := f.key("user@example.test")
	c := domain.NewCheck(f.policy, key)
	require.NoError(t, c.Validate())
	require.Equal(t, int64(1), c.Cost())
	require.Equal(t, f.policy, c.Policy())
	require.Equal(t, key, c.SubjectKey())
	require.Equal(t, domain.NewCounterKey(f.policy.Fingerprint(), key), c.CounterKey())
}

func TestNewCheckCost(t *testing.T) {
	t.Parallel()
	f := setup(t) // limit 5
	maxPolicy := newPolicy(t, "auth.login", "identity", domain.MaxLimit, time.Second)

	accepted := []struct {
		name   string
		policy domain.Policy
		cost   int64
	}{
		{"cost 1", f.policy, 1},
		{"cost equal to the limit", f.policy, 5},
		{"MaxLimit", maxPolicy, domain.MaxLimit},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := domain.NewCheckCost(tc.policy, f.key("s"), tc.cost)
			require.NoError(t, err)
			require.Equal(t, tc.cost, c.Cost())
			require.NoError(t, c.Validate())
		})
	}

	rejected := []struct {
		name   string
		policy domain.Policy
		cost   int64
		text   string
	}{
		{"cost 0", f.policy, 0, "runlimit: invalid check: cost 0 is outside 1..5"},
		{"cost -1", f.policy, -1, "runlimit: invalid check: cost -1 is outside 1..5"},
		{"cost MinInt64", maxPolicy, math.MinInt64, "runlimit: invalid check: cost -9223372036854775808 is outside 1..9223372036854775807"},
		{"cost limit+1", f.policy, 6, "runlimit: invalid check: cost 6 is outside 1..5"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := domain.NewCheckCost(tc.policy, f.key("s"), tc.cost)
			require.Equal(t, domain.Check{}, c)
			require.EqualError(t, err, tc.text)
			requireCheckError(t, err, domain.CostOutOfRange)
			var ce *domain.CheckError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.cost, ce.Cost)
			require.Equal(t, tc.policy.Limit(), ce.Limit)
		})
	}
}

func TestCheckValidateZeroParts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	key := f.key("s")

	cases := []struct {
		name    string
		build   func() (domain.Check, error)
		problem domain.CheckProblem
		text    string
	}{
		{
			name:    "zero check",
			build:   func() (domain.Check, error) { return domain.Check{}, domain.Check{}.Validate() },
			problem: domain.CheckZeroPolicy,
			text:    "runlimit: invalid check: zero policy (use NewPolicy)",
		},
		{
			name:    "NewCheck with a zero policy",
			build:   func() (domain.Check, error) { c := domain.NewCheck(domain.Policy{}, key); return c, c.Validate() },
			problem: domain.CheckZeroPolicy,
		},
		{
			name:    "NewCheckCost with a zero policy",
			build:   func() (domain.Check, error) { return domain.NewCheckCost(domain.Policy{}, key, 1) },
			problem: domain.CheckZeroPolicy,
		},
		{
			name: "NewCheck with a zero key",
			build: func() (domain.Check, error) {
				c := domain.NewCheck(f.policy, domain.SubjectKey{})
				return c, c.Validate()
			},
			problem: domain.CheckZeroKey,
			text:    "runlimit: invalid check: zero subject key (derive one with a KeyHasher)",
		},
		{
			name:    "NewCheckCost with a zero key",
			build:   func() (domain.Check, error) { return domain.NewCheckCost(f.policy, domain.SubjectKey{}, 1) },
			problem: domain.CheckZeroKey,
		},
		{
			name:    "zero policy is reported before a zero key and a bad cost",
			build:   func() (domain.Check, error) { return domain.NewCheckCost(domain.Policy{}, domain.SubjectKey{}, 0) },
			problem: domain.CheckZeroPolicy,
		},
		{
			name:    "zero key is reported before a bad cost",
			build:   func() (domain.Check, error) { return domain.NewCheckCost(f.policy, domain.SubjectKey{}, 0) },
			problem: domain.CheckZeroKey,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.build()
			requireCheckError(t, err, tc.problem)
			if tc.text != "" {
				require.EqualError(t, err, tc.text)
			}
		})
	}
}

func requireCheckError(t *testing.T, err error, problem domain.CheckProblem) {
	t.Helper()
	require.ErrorIs(t, err, domain.ErrInvalidCheck)
	require.ErrorIs(t, err, domain.ErrInvalidInput)
	require.NotErrorIs(t, err, domain.ErrInvalidBatch)
	var ce *domain.CheckError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, problem, ce.Problem)
}

// TestValidateCheckAgreesWithValidate: the pointer form the admission
// paths use gives Validate's answer for every way a check can be built,
// and a nil check is the zero check.
func TestValidateCheckAgreesWithValidate(t *testing.T) {
	t.Parallel()
	f := setup(t)
	key := f.key("s")
	costly, err := domain.NewCheckCost(f.policy, key, f.policy.Limit())
	require.NoError(t, err)
	tooCostly, _ := domain.NewCheckCost(f.policy, key, f.policy.Limit()+1)
	for name, c := range map[string]domain.Check{
		"zero":                  {},
		"NewCheck":              domain.NewCheck(f.policy, key),
		"NewCheck, zero policy": domain.NewCheck(domain.Policy{}, key),
		"NewCheck, zero key":    domain.NewCheck(f.policy, domain.SubjectKey{}),
		"NewCheckCost at limit": costly,
		"NewCheckCost refused":  tooCostly,
	} {
		require.Equal(t, c.Validate(), domain.ValidateCheck(&c), name)
	}
	requireCheckError(t, domain.ValidateCheck(nil), domain.CheckZeroPolicy)
}

// A store's single-check path finds a check's counter without building
// its key: the digest and the comparison must agree with the built key's,
// for every byte of either half and for a check without a policy.
func TestCheckCounterKeyShortcuts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	other := newPolicy(t, "auth.other", "identity", 7, time.Minute)
	checks := []domain.Check{
		domain.NewCheck(f.policy, f.key("a")),
		domain.NewCheck(f.policy, f.key("b")),
		domain.NewCheck(other, f.key("a")),
		domain.NewCheck(domain.Policy{}, f.key("a")),
		{},
	}
	var keys []domain.CounterKey
	for _, c := range checks {
		k := c.CounterKey()
		keys = append(keys, k)
		// Every key one byte away from k, in either half.
		b := k.Bytes()
		for i := range b {
			flipped := b
			flipped[i] ^= 0x01
			var fp domain.Fingerprint
			copy(fp[:], flipped[:32])
			keys = append(keys, domain.NewCounterKey(fp, domain.SubjectKeyFromBytes([32]byte(flipped[32:]))))
		}
	}
	for i, c := range checks {
		built := c.CounterKey()
		require.Equal(t, built.Hash64(), c.CounterKeyHash64(), "check %d", i)
		matches := 0
		for j := range keys {
			want := built == keys[j]
			require.Equal(t, want, c.HasCounterKey(&keys[j]), "check %d, key %d", i, j)
			if want {
				matches++
			}
		}
		require.Positive(t, matches, "check %d matches its own key", i)
	}
}
