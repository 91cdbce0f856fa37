package leakcheck

import (
	"crypto/sha256"
	"encoding"
	"reflect"
	"testing"
)

// Case is one value a leak test prints: [Value] keeps the value's own
// type, so that the host structs of [Hosts] hold it by value and not as an
// interface.
type Case struct {
	Name string
	// Type is the value's static type, T of [Value]: [RequireEveryType]
	// looks for a package's types among the cases' types.
	Type reflect.Type
	run  func(t testing.TB, secrets ...[]byte)
}

// Value returns the Case of v: [Check] and [CheckDump] of it, under name,
// and [CheckPrintable] of T's zero value and of a nil *T, which a host
// holds before it has built one.
func Value[T any](name string, v T) Case {
	return Case{Name: name, Type: reflect.TypeFor[T](), run: func(t testing.TB, secrets ...[]byte) {
		t.Helper()
		Check(t, name, v, secrets...)
		CheckDump(t, name, v, secrets...)
		var zero T
		CheckPrintable(t, name+" (zero value)", zero)
		CheckPrintable(t, name+" (nil pointer)", (*T)(nil))
	}}
}

// Run prints the value through every printer and fails t when any output
// spells one of secrets.
func (c Case) Run(t testing.TB, secrets ...[]byte) {
	t.Helper()
	c.run(t, secrets...)
}

// KeyedStates returns the chaining words of the two SHA-256 states HMAC
// keeps after absorbing secret's ipad and opad blocks: from either, every
// subject key can be computed without the secret, so a printed hasher must
// show neither. secret must be at most one block long, as HMAC then uses
// it as is.
func KeyedStates(t testing.TB, secret []byte) [][]byte {
	t.Helper()
	if len(secret) > sha256.BlockSize {
		t.Fatalf("leakcheck: a %d-byte secret is hashed before use; KeyedStates takes at most %d bytes", len(secret), sha256.BlockSize)
	}
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
		if err != nil {
			t.Fatalf("leakcheck: marshal a SHA-256 state: %v", err)
		}
		// The marshaled state is a 4-byte magic, the eight chaining words,
		// the (empty) block buffer and the length: only the words are
		// secret.
		out = append(out, state[4:4+sha256.Size])
	}
	return out
}
