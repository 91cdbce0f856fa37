package domain_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

func TestSubjectKeyBytesRoundTrip(t *testing.T) {
	t.Parallel()
	f := setup(t)

	k := f.key("user@example.test")
	require.Equal(t, subjectKeyFromSpec(testSecret, "auth.login", "identity", []byte("user@example.test")), k.Bytes())
	back := domain.SubjectKeyFromBytes(k.Bytes())
	require.Equal(t, k, back, "a key read back from storage equals the derived key")
	require.True(t, k == back)
	require.False(t, back.IsZero())

	var zero domain.SubjectKey
	require.True(t, zero.IsZero())
	require.False(t, domain.SubjectKeyFromBytes([32]byte{}).IsZero(), "all-zero bytes read from storage are still a key")
	require.NotEqual(t, zero, domain.SubjectKeyFromBytes([32]byte{}))
}

func TestCounterKeyLayout(t *testing.T) {
	t.Parallel()
	f := setup(t)

	k := f.key("user@example.test")
	c := domain.NewCounterKey(f.policy.Fingerprint(), k)
	fp, sk := f.policy.Fingerprint(), k.Bytes()
	want := append(fp[:], sk[:]...)
	got := c.Bytes()
	require.Equal(t, want, got[:], "fingerprint followed by subject key")
	require.Equal(t, domain.CounterKeySize, len(got))
	require.Equal(t, f.policy.Fingerprint(), c.Fingerprint())
	require.Equal(t, k, c.SubjectKey())
	require.Equal(t, c, f.check("user@example.test").CounterKey())
	require.Equal(t, c, domain.NewCounterKey(c.Fingerprint(), domain.SubjectKeyFromBytes(k.Bytes())))
}

func TestCounterKeyCompareIsByteWise(t *testing.T) {
	t.Parallel()
	f := setup(t)

	// Keys that differ in the fingerprint, in the subject key, and in every
	// position: their order must be the order of their 64 bytes.
	var fps []domain.Fingerprint
	for _, p := range []domain.Policy{f.policy, newPolicy(t, "b", "c", 1, time.Millisecond), newPolicy(t, "d", "e", 2, time.Millisecond)} {
		fps = append(fps, p.Fingerprint())
	}
	var keys []domain.CounterKey
	for _, fp := range fps {
		for i := range 40 {
			keys = append(keys, domain.NewCounterKey(fp, f.hasher.Key(f.policy, []byte{byte(i)})))
		}
		// Subject keys sharing a long prefix, differing late and in both
		// directions of every bit.
		for _, b := range [][32]byte{{31: 0x00}, {31: 0x01}, {31: 0x80}, {31: 0xff}, {0: 0xff}, {0: 0x7f, 31: 0xff}} {
			keys = append(keys, domain.NewCounterKey(fp, domain.SubjectKeyFromBytes(b)))
		}
	}
	for _, a := range keys {
		ab := a.Bytes()
		for _, b := range keys {
			bb := b.Bytes()
			require.Equal(t, bytes.Compare(ab[:], bb[:]), a.Compare(b))
		}
	}

	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, domain.CounterKey.Compare)
	require.True(t, slices.IsSortedFunc(sorted, func(a, b domain.CounterKey) int {
		ab, bb := a.Bytes(), b.Bytes()
		return bytes.Compare(ab[:], bb[:])
	}))
}
