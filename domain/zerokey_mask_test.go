package domain_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// The zero keys hold no key, so their bytes are zero: anything else would
// be the per-process mask that keeps derived keys out of reflection-based
// printers, and a host that logged it would let every masked key printed
// in a struct dump be unmasked.
func TestZeroKeysShowNoMask(t *testing.T) {
	var zero [32]byte
	require.True(t, domain.SubjectKey{}.Bytes() == zero, "the zero SubjectKey's bytes must be zero")

	c := domain.CounterKey{}.Bytes()
	require.True(t, [32]byte(c[32:]) == zero, "the zero CounterKey's subject bytes must be zero")

	p := domain.MustPolicy("zero.mask", "client", 1, 1000000000)
	joined := domain.NewCounterKey(p.Fingerprint(), domain.SubjectKey{}).Bytes()
	require.True(t, [32]byte(joined[32:]) == zero, "a counter key joined from the zero SubjectKey must end in zero bytes")
	fp := p.Fingerprint()
	require.Equal(t, fp[:], joined[:32], "the fingerprint part is kept")

	// Derived keys are unaffected: the bytes round-trip.
	h, err := domain.NewKeyHasher(make([]byte, domain.MinSecretLength))
	require.NoError(t, err)
	k := h.KeyString(p, "subject")
	require.True(t, domain.SubjectKeyFromBytes(k.Bytes()) == k, "a derived key's bytes must rebuild it")
	ck := domain.NewCounterKey(p.Fingerprint(), k).Bytes()
	require.True(t, [32]byte(ck[32:]) == k.Bytes(), "a counter key ends in its subject key's bytes")
}
