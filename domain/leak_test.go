package domain_test

import (
	"crypto/sha256"
	"encoding"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// leakCase prints one value through every printer leakcheck knows, alone
// and nested in host structs, keeping the value's own type so that the
// hosts hold it by value and not as an interface.
type leakCase struct {
	name  string
	check func(t *testing.T, secrets ...[]byte)
}

func leak[T any](name string, v T) leakCase {
	return leakCase{name, func(t *testing.T, secrets ...[]byte) { leakcheck.Check(t, name, v, secrets...) }}
}

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

// keyedStates returns the chaining words of the SHA-256 states HMAC keeps
// after absorbing the secret's ipad and opad blocks: from either, the
// subject keys of every subject can be computed without the secret.
func keyedStates(t *testing.T, secret []byte) [][]byte {
	t.Helper()
	require.LessOrEqual(t, len(secret), sha256.BlockSize, "the test secret is used as the HMAC key as is")
	var out [][]byte
	for _, pad := range []byte{0x36, 0x5c} {
		block := make([]byte, sha256.BlockSize)
		copy(block, secret)
		for i := range block {
			block[i] ^= pad
		}
		h := sha256.New()
		h.Write(block)
		state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
		require.NoError(t, err)
		// The marshaled state is a 4-byte magic, the eight chaining words,
		// the (empty) block buffer and the length: only the words are
		// secret.
		out = append(out, state[4:4+sha256.Size])
	}
	return out
}

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
	secrets = append(secrets, keyedStates(t, testSecret)...)
	for i, c := range checks {
		sk, ck := c.SubjectKey().Bytes(), c.CounterKey().Bytes()
		// The counter key's first half is the policy's public
		// fingerprint; its second half is the subject key.
		secrets = append(secrets, []byte(subjects[i]), sk[:], ck[domain.CounterKeySize-32:])
	}

	cases := []leakCase{
		leak("KeyHasher", f.hasher),
		leak("zero KeyHasher", domain.KeyHasher{}),
		leak("embedded KeyHasher", embeddedHasher{f.hasher}),
		leak("embedded SubjectKey", embeddedKey{key, "n"}),
		leak("SubjectKey", key),
		leak("CounterKey", counter),
		leak("Fingerprint", f.policy.Fingerprint()),
		leak("Check", checks[0]),
		leak("shadow Check", shadowCheck),
		leak("[]Check", checks),
		leak("map keyed by CounterKey", map[domain.CounterKey]int{counter: 1}),
		leak("Policy", f.policy),
		leak("PolicyID", f.policy.ID()),
		leak("ScopeID", f.policy.Scope()),
		leak("Mode", domain.Shadow),
		leak("Outcome", domain.Allowed),
		leak("DenialReason", domain.QuotaExhausted),
		leak("Instant", ms(7)),
		leak("Counter", allowed.Next(0)),
		leak("Observation", domain.Observation{Counter: allowed.Next(0), Full: true}),
		leak("Decision", single),
		leak("Allowance", func() domain.Allowance { a, _ := single.Allowance(); return a }()),
		leak("Denial", den),
		leak("allowed BatchDecision", allowedDecision),
		leak("denied BatchDecision", deniedDecision),
		leak("prepared Batch", newBatch(t, checks...)),
		leak("evaluated Batch", allowed),
		leak("unprepared Batch", &domain.Batch{}),
		leak("IdentifierError", identifierErr),
		leak("PolicyError", policyErr),
		leak("CheckError", checkErr),
		leak("BatchError", batchErr),
		leak("BatchError of an invalid check", invalidCheckBatchErr),
		leak("CorruptCounterError", error(&domain.CorruptCounterError{Index: 1})),
		leak("ErrBatchProtocol", domain.ErrBatchProtocol),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.check(t, secrets...)
		})
	}
}
