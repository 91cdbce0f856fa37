package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// Host structs that embed keys and hashers: their methods are promoted, so
// fmt calls them, and reflection walks the rest.
type (
	embeddedKey struct {
		domain.SubjectKey
		Name string
	}
	embeddedHasher struct {
		domain.KeyHasher
	}
)

func TestNothingPrintsKeysOrSecrets(t *testing.T) {
	t.Parallel()
	f := setup(t)

	subjects := []string{"alice@example.test", "198.51.100.7"}
	shadow := withMode(t, f.policy, domain.Shadow)
	checks := []domain.Check{f.check(subjects[0]), f.check(subjects[1])}
	// Mode is not part of the fingerprint: the shadow check shares the
	// second check's keys.
	shadowCheck := domain.NewCheck(shadow, f.hasher.KeyString(shadow, subjects[1]))
	key := checks[0].SubjectKey()
	counter := checks[0].CounterKey()

	allowed := newBatch(t, checks[0])
	allowed.Observe(0, domain.Observation{})
	commit, err := allowed.Evaluate(ms(1))
	require.NoError(t, err)
	require.True(t, commit)
	allowedDecision, err := allowed.Decision()
	require.NoError(t, err)

	denied := newBatch(t, checks[0])
	denied.Observe(0, domain.Observation{Counter: allowed.Next(0), Full: true})
	_, err = denied.Evaluate(ms(2))
	require.NoError(t, err)
	deniedDecision, err := denied.Decision()
	require.NoError(t, err)
	single, _ := allowedDecision.Decision(0)
	den, _, _ := deniedDecision.Denied()

	_, identifierErr := domain.NewPolicyID("bad id")
	_, policyErr := domain.NewPolicy(f.policy.ID(), f.policy.Scope(), 0, time.Second)
	_, checkErr := domain.NewCheckCost(f.policy, key, 99)
	_, batchErr := domain.NewBatch([]domain.Check{checks[0], checks[0]}, 0)
	_, invalidCheckBatchErr := domain.NewBatch([]domain.Check{checks[0], {}}, 0)

	var secrets [][]byte
	secrets = append(secrets, testSecret)
	secrets = append(secrets, leakcheck.KeyedStates(t, testSecret)...)
	for i, c := range checks {
		sk, ck := c.SubjectKey().Bytes(), c.CounterKey().Bytes()
		// The counter key's first half is the policy's public
		// fingerprint; its second half is the subject key.
		secrets = append(secrets, []byte(subjects[i]), sk[:], ck[domain.CounterKeySize-32:])
	}

	cases := []leakcheck.Case{
		leakcheck.Value("KeyHasher", f.hasher),
		leakcheck.Value("zero KeyHasher", domain.KeyHasher{}),
		leakcheck.Value("embedded KeyHasher", embeddedHasher{f.hasher}),
		leakcheck.Value("embedded SubjectKey", embeddedKey{key, "n"}),
		leakcheck.Value("SubjectKey", key),
		leakcheck.Value("CounterKey", counter),
		leakcheck.Value("Fingerprint", f.policy.Fingerprint()),
		leakcheck.Value("Check", checks[0]),
		leakcheck.Value("shadow Check", shadowCheck),
		leakcheck.Value("[]Check", checks),
		leakcheck.Value("map keyed by CounterKey", map[domain.CounterKey]int{counter: 1}),
		leakcheck.Value("Policy", f.policy),
		leakcheck.Value("PolicyID", f.policy.ID()),
		leakcheck.Value("ScopeID", f.policy.Scope()),
		leakcheck.Value("Mode", domain.Shadow),
		leakcheck.Value("Outcome", domain.Allowed),
		leakcheck.Value("DenialReason", domain.QuotaExhausted),
		leakcheck.Value("Instant", ms(7)),
		leakcheck.Value("Counter", allowed.Next(0)),
		leakcheck.Value("Observation", domain.Observation{Counter: allowed.Next(0), Full: true}),
		leakcheck.Value("Decision", single),
		leakcheck.Value("Allowance", func() domain.Allowance { a, _ := single.Allowance(); return a }()),
		leakcheck.Value("Denial", den),
		leakcheck.Value("allowed BatchDecision", allowedDecision),
		leakcheck.Value("denied BatchDecision", deniedDecision),
		leakcheck.Value("prepared Batch", newBatch(t, checks...)),
		leakcheck.Value("evaluated Batch", allowed),
		leakcheck.Value("unprepared Batch", &domain.Batch{}),
		leakcheck.Value("IdentifierError", identifierErr),
		leakcheck.Value("PolicyError", policyErr),
		leakcheck.Value("CheckError", checkErr),
		leakcheck.Value("BatchError", batchErr),
		leakcheck.Value("BatchError of an invalid check", invalidCheckBatchErr),
		leakcheck.Value("CorruptCounterError", error(&domain.CorruptCounterError{Index: 1})),
		leakcheck.Value("ErrBatchProtocol", domain.ErrBatchProtocol),
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			tc.Run(t, secrets...)
		})
	}
}
