package domain_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// subjectKeyFromSpec builds the subject key with crypto/hmac from the SPEC
// text, independently of the implementation.
func subjectKeyFromSpec(secret []byte, id, scope string, subject []byte) [32]byte {
	mac := hmac.New(sha256.New, secret)
	var msg []byte
	msg = append(msg, "runlimit/subject-key/v1"...)
	msg = append(msg, 0x00)
	msg = append(msg, id...)
	msg = append(msg, 0x00)
	msg = append(msg, scope...)
	msg = append(msg, 0x00)
	msg = append(msg, subject...)
	mac.Write(msg)
	return [32]byte(mac.Sum(nil))
}

// patterned returns n bytes that differ from their neighbours, so a
// misplaced chunk changes the MAC.
func patterned(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

func TestKeyHasherMatchesHMAC(t *testing.T) {
	t.Parallel()

	long := strings.Repeat("L", domain.MaxIdentifierLength)
	policies := []struct {
		name, id, scope string
	}{
		// The scratch buffer holds 512 bytes; with these identifiers the
		// prefix is 44 bytes, so subjects of 468 and 980 bytes end exactly
		// on a flush.
		{"typical", "auth.login", "identity"},
		// The longest prefix, 282 bytes: a 230-byte subject fills the buffer.
		{"maximal ids", long, long},
	}
	secrets := map[string][]byte{
		"32 bytes":  patterned(32, 1),
		"64 bytes":  patterned(64, 2),
		"65 bytes":  patterned(65, 3),
		"100 bytes": patterned(100, 4),
	}
	subjectLengths := []int{0, 1, 20, 229, 230, 231, 300, 467, 468, 469, 511, 512, 513, 980, 981, 2000}

	for _, pc := range policies {
		for secretName, secret := range secrets {
			t.Run(pc.name+"/secret "+secretName, func(t *testing.T) {
				t.Parallel()
				h, err := domain.NewKeyHasher(secret)
				require.NoError(t, err)
				p := newPolicy(t, pc.id, pc.scope, 3, time.Minute)
				for _, n := range subjectLengths {
					subject := patterned(n, byte(n))
					want := subjectKeyFromSpec(secret, pc.id, pc.scope, subject)
					require.Equal(t, want, h.Key(p, subject).Bytes(), "subject of %d bytes", n)
					require.Equal(t, want, h.KeyString(p, string(subject)).Bytes(), "string subject of %d bytes", n)
				}
			})
		}
	}
}

// Literal subject keys pin the compatibility contract with Runlimit for
// Rust. They were computed once outside Go, with Python's hmac module:
//
//	hmac.new(secret, b"runlimit/subject-key/v1\0" + id + b"\0" + scope
//	         + b"\0" + subject, hashlib.sha256)
//
// and cross-checked against subjectKeyFromSpec. A change to either
// construction breaks this test.
func TestKeyHasherVectors(t *testing.T) {
	t.Parallel()

	secret100 := make([]byte, 100) // bytes((i*7+3) % 256 for i in range(100))
	for i := range secret100 {
		secret100[i] = byte((i*7 + 3) % 256)
	}
	secret64 := make([]byte, 64) // bytes(range(64))
	for i := range secret64 {
		secret64[i] = byte(i)
	}
	subject2000 := make([]byte, 2000) // bytes(i % 251 for i in range(2000))
	for i := range subject2000 {
		subject2000[i] = byte(i % 251)
	}

	cases := []struct {
		name    string
		secret  []byte
		scope   string
		subject []byte
		want    string
	}{
		{"32-byte secret", secret64[:32], "identity", []byte("user@example.test"), "b04a3a9be1254a5324b60a3c8ee98e266177f4d21a587cee87f5ecfd11c6cc75"},
		{"100-byte secret, empty subject", secret100, "client", nil, "15ee047ede8fca9d08c1e91ce77be35ad0b8ea2f483910d4de0760538c352084"},
		{"64-byte secret, 2000-byte subject", secret64, "client", subject2000, "8e02fd89a4be66a7e76e608d9db0c7918fbb3fca2252a7458ac40e2135123827"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, err := domain.NewKeyHasher(tc.secret)
			require.NoError(t, err)
			p := newPolicy(t, "auth.login", tc.scope, 8, time.Minute)
			got := h.Key(p, tc.subject).Bytes()
			require.Equal(t, tc.want, hex.EncodeToString(got[:]))
			want := subjectKeyFromSpec(tc.secret, "auth.login", tc.scope, tc.subject)
			require.Equal(t, tc.want, hex.EncodeToString(want[:]))
		})
	}
}

func TestKeyHasherInputs(t *testing.T) {
	t.Parallel()
	f := setup(t)

	base := f.hasher.KeyString(f.policy, "user@example.test")
	require.False(t, base.IsZero())
	require.Equal(t, base, f.hasher.KeyString(f.policy, "user@example.test"), "derivation is deterministic")

	// Only the policy id and scope id enter the key; limit, window and mode
	// change the fingerprint instead.
	same := map[string]domain.Policy{
		"other limit":  newPolicy(t, "auth.login", "identity", 6, time.Second),
		"other window": newPolicy(t, "auth.login", "identity", 5, time.Minute),
		"shadow mode":  withMode(t, f.policy, domain.Shadow),
	}
	for name, p := range same {
		require.Equal(t, base, f.hasher.KeyString(p, "user@example.test"), name)
	}

	different := map[string]domain.SubjectKey{
		"other subject":        f.hasher.KeyString(f.policy, "user@example.tesT"),
		"other policy id":      f.hasher.KeyString(newPolicy(t, "auth.reset", "identity", 5, time.Second), "user@example.test"),
		"other scope id":       f.hasher.KeyString(newPolicy(t, "auth.login", "client", 5, time.Second), "user@example.test"),
		"scope/subject border": f.hasher.KeyString(newPolicy(t, "auth.login", "identityu", 5, time.Second), "ser@example.test"),
	}
	other, err := domain.NewKeyHasher(append([]byte("another"), testSecret[7:]...))
	require.NoError(t, err)
	different["other secret"] = other.KeyString(f.policy, "user@example.test")
	for name, k := range different {
		require.NotEqual(t, base.Bytes(), k.Bytes(), name)
	}
}

func TestNewKeyHasherSecretLength(t *testing.T) {
	t.Parallel()

	for _, n := range []int{0, 1, 31} {
		h, err := domain.NewKeyHasher(make([]byte, n))
		require.ErrorIs(t, err, domain.ErrSecretTooShort, "%d bytes", n)
		require.ErrorIs(t, err, domain.ErrInvalidInput, "%d bytes: a caller mistake", n)
		require.True(t, h.IsZero())
	}
	_, err := domain.NewKeyHasher(nil)
	require.ErrorIs(t, err, domain.ErrSecretTooShort)

	h, err := domain.NewKeyHasher(make([]byte, domain.MinSecretLength))
	require.NoError(t, err)
	require.False(t, h.IsZero())
	require.Equal(t, 32, domain.MinSecretLength)
}

func TestKeyHasherKeepsNoReferenceToTheSecret(t *testing.T) {
	t.Parallel()

	for _, n := range []int{32, 64, 100} {
		secret := patterned(n, 9)
		kept := bytes.Clone(secret)
		h, err := domain.NewKeyHasher(secret)
		require.NoError(t, err)
		clear(secret) // the caller wipes its copy
		p := newPolicy(t, "auth.login", "identity", 1, time.Second)
		require.Equal(t, subjectKeyFromSpec(kept, "auth.login", "identity", []byte("s")), h.KeyString(p, "s").Bytes())
	}
}

// TestZeroKeyHasherFailsClosed: a hasher that NewKeyHasher did not build
// used to panic. It derives the zero SubjectKey, which no check accepts,
// so the mistake is an ErrInvalidInput error before any store work.
func TestZeroKeyHasherFailsClosed(t *testing.T) {
	t.Parallel()
	f := setup(t)

	var zero domain.KeyHasher
	require.True(t, zero.IsZero())
	var k, ks domain.SubjectKey
	require.NotPanics(t, func() { k = zero.Key(f.policy, []byte("s")) })
	require.NotPanics(t, func() { ks = zero.KeyString(f.policy, "s") })
	require.NotPanics(t, func() { _ = zero.Key(domain.Policy{}, nil) })
	require.True(t, k.IsZero())
	require.True(t, ks.IsZero())

	c := domain.NewCheck(f.policy, k)
	require.ErrorIs(t, c.Validate(), domain.ErrInvalidInput)
	_, err := domain.NewCheckCost(f.policy, ks, 1)
	require.ErrorIs(t, err, domain.ErrInvalidInput)
	_, err = domain.NewBatch([]domain.Check{c}, 0)
	require.ErrorIs(t, err, domain.ErrInvalidInput)
}

func TestKeyHasherConcurrentUse(t *testing.T) {
	t.Parallel()
	f := setup(t)

	const goroutines, perGoroutine = 16, 200
	type result struct {
		subject []byte
		key     domain.SubjectKey
	}
	results := make(chan result, goroutines*perGoroutine)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				// Lengths cross the scratch buffer's size so that goroutines
				// sharing pooled scratch space would corrupt each other.
				subject := patterned((g*perGoroutine+i)%1200, byte(g))
				subject = fmt.Appendf(subject, "/%d/%d", g, i)
				results <- result{subject, f.hasher.Key(f.policy, subject)}
			}
		})
	}
	wg.Wait()
	close(results)

	seen := make(map[[32]byte]bool, goroutines*perGoroutine)
	for r := range results {
		want := subjectKeyFromSpec(testSecret, "auth.login", "identity", r.subject)
		require.Equal(t, want, r.key.Bytes())
		seen[want] = true
	}
	require.Len(t, seen, goroutines*perGoroutine)
}

func BenchmarkKeyHasher(b *testing.B) {
	f := setup(b)
	// Distinct subjects of about 20 bytes, as normalized emails are.
	subjects := make([]string, 1024)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("user%06d@example.test", i)
	}
	first := f.hasher.KeyString(f.policy, subjects[0])
	require.NotEqual(b, first, f.hasher.KeyString(f.policy, subjects[1]), "the benchmark must hit distinct keys")

	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = f.hasher.KeyString(f.policy, subjects[i%len(subjects)])
		i++
	}
}

// BenchmarkKeyHasherVsHMAC derives the key of the peer comparison's subject
// two ways in one run: through KeyHasher, and through crypto/hmac with a
// reused Reset over the same message, the floor a hand-kept HMAC reaches.
func BenchmarkKeyHasherVsHMAC(b *testing.B) {
	p := newPolicy(b, "bench.peers", "client", domain.MaxLimit, domain.MaxWindow)
	const subject = "client-0"
	hasher, err := domain.NewKeyHasher(testSecret)
	require.NoError(b, err)
	mac := hmac.New(sha256.New, testSecret)
	msg := []byte("runlimit/subject-key/v1\x00bench.peers\x00client\x00" + subject)
	var sum [sha256.Size]byte
	mac.Write(msg)
	want := hasher.KeyString(p, subject).Bytes()
	require.Equal(b, want[:], mac.Sum(sum[:0]), "both sides must compute the same MAC")

	b.Run("impl=keyhasher", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = hasher.KeyString(p, subject)
		}
	})
	b.Run("impl=hmac-reset", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			mac.Reset()
			mac.Write(msg)
			_ = mac.Sum(sum[:0])
		}
	})
}
