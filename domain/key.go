package domain

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
)

const redacted = "[redacted]"

// keyMask keeps key bytes out of reflection. fmt prints a struct's unexported
// fields by reflection without calling their Format methods, so a host struct
// holding a key in an unexported field (struct{ key domain.SubjectKey })
// would print the key's bytes, and so would a [Batch]. Keys therefore hold
// their subject-key bytes XORed with a mask drawn once per process: such a
// print shows bytes that match no stored key, in no other process.
// [SubjectKey.Bytes], [CounterKey.Bytes] and [CounterKey.Compare] remove the
// mask; == is unaffected, as every key of a process shares it.
var keyMask = newKeyMask()

func newKeyMask() (m [32]byte) {
	// crypto/rand.Read never fails since Go 1.24 (the program crashes
	// instead), and this one read at start-up is the domain's only contact
	// with the operating system.
	_, _ = rand.Read(m[:])
	return m
}

// maskKey applies or removes keyMask.
func maskKey(b *[32]byte) (m [32]byte) {
	m = *b
	maskInPlace(&m)
	return m
}

// maskInPlace applies or removes keyMask in b itself. Four word XORs,
// unlike subtle.XORBytes, need no call on the path of every derived key.
func maskInPlace(b *[32]byte) {
	le := binary.LittleEndian
	for i := 0; i < 32; i += 8 {
		le.PutUint64(b[i:], le.Uint64(b[i:])^le.Uint64(keyMask[i:]))
	}
}

// SubjectKey is the 32-byte HMAC of a normalized subject (an email, an
// account id, a network prefix) under one policy and scope. Stores keep it
// instead of the subject, so raw subjects never reach storage, logs or
// metrics.
//
// A SubjectKey never prints its bytes: every fmt verb shows "[redacted]",
// and reflection (fmt printing a host struct's unexported field) sees only
// bytes masked for this process.
//
// The zero value is invalid; derive one with [KeyHasher.Key].
type SubjectKey struct {
	masked [32]byte // the key XOR keyMask
	set    bool
}

// SubjectKeyFromBytes rebuilds a subject key that a store read back from
// storage. Applications derive keys with [KeyHasher.Key] instead.
func SubjectKeyFromBytes(b [32]byte) SubjectKey { return SubjectKey{masked: maskKey(&b), set: true} }

// Bytes returns the key bytes for a storage adapter to persist. Never log
// them. The zero SubjectKey has no bytes: it returns 32 zero bytes, never
// anything of the mask that hides derived keys from reflection.
func (k SubjectKey) Bytes() [32]byte {
	if !k.set {
		return [32]byte{}
	}
	return maskKey(&k.masked)
}

// IsZero reports whether k is the zero value rather than a derived key.
func (k SubjectKey) IsZero() bool { return !k.set }

// String returns "[redacted]".
func (k SubjectKey) String() string { return "SubjectKey" + redacted }

// GoString returns "[redacted]".
func (k SubjectKey) GoString() string { return k.String() }

// Format prints k as "SubjectKey[redacted]" under every verb.
func (k SubjectKey) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// CounterKeySize is the length of a counter key in bytes.
const CounterKeySize = 64

// CounterKey identifies one counter in a store: the policy fingerprint
// followed by the subject key. Stores order keys byte-wise over these 64 bytes
// with [CounterKey.Compare]; it never prints its bytes.
//
// A CounterKey is aligned as a uint64 is, so that a store may compare or
// hash it a word at a time on any platform.
type CounterKey struct {
	_   [0]uint64 // alignment only: no size, no effect on ==
	fp  Fingerprint
	sub [32]byte // the subject key XOR keyMask
}

// NewCounterKey joins a fingerprint and a subject key.
func NewCounterKey(f Fingerprint, k SubjectKey) CounterKey {
	var c CounterKey
	c.join(&f, &k)
	return c
}

// join fills c in place; batches build their keys with it, without
// temporaries, on every admission.
func (c *CounterKey) join(f *Fingerprint, k *SubjectKey) {
	// Field assignments, unlike copy, compile to a few moves instead of a
	// call.
	c.fp = *f
	c.sub = k.masked
}

// Fingerprint returns the first 32 bytes of the key.
func (c CounterKey) Fingerprint() Fingerprint { return c.fp }

// SubjectKey returns the last 32 bytes of the key: the zero SubjectKey for
// a zero CounterKey, or one joined from the zero SubjectKey, so that a
// check built from it is invalid ([CheckZeroKey]) rather than a check of
// a key no hasher derived.
func (c CounterKey) SubjectKey() SubjectKey {
	return SubjectKey{masked: c.sub, set: c.sub != [32]byte{}}
}

// Hash64 returns a well-mixed 64-bit digest of the key for in-memory hash
// tables and shard selection: a word of the fingerprint XOR a word of the
// subject key, both already uniform. It is stable only within one process
// (it reads the masked form) and must never be stored or sent.
func (c *CounterKey) Hash64() uint64 {
	return binary.LittleEndian.Uint64(c.fp[0:8]) ^ binary.LittleEndian.Uint64(c.sub[0:8])
}

// Bytes returns the key bytes for a storage adapter. Never log them. A
// key joined from the zero SubjectKey ends in 32 zero bytes, as that key's
// Bytes does.
func (c CounterKey) Bytes() [CounterKeySize]byte {
	var b [CounterKeySize]byte
	copy(b[:32], c.fp[:])
	if c.sub != [32]byte{} {
		subtle.XORBytes(b[32:], c.sub[:], keyMask[:])
	}
	return b
}

// Compare orders counter keys byte-wise; it returns -1, 0 or +1. Stores lock
// keys in this order so that opposite-order batches cannot deadlock.
func (c CounterKey) Compare(other CounterKey) int {
	if n := bytes.Compare(c.fp[:], other.fp[:]); n != 0 {
		return n
	}
	// The mask maps equal bytes to equal bytes, so the first byte where the
	// masked subject keys differ is the first byte where the keys differ;
	// only that byte needs unmasking.
	for i := range c.sub {
		if c.sub[i] != other.sub[i] {
			return cmp.Compare(c.sub[i]^keyMask[i], other.sub[i]^keyMask[i])
		}
	}
	return 0
}

// String returns "CounterKey[redacted]".
func (c CounterKey) String() string { return "CounterKey" + redacted }

// GoString returns "CounterKey[redacted]".
func (c CounterKey) GoString() string { return c.String() }

// Format prints c as "CounterKey[redacted]" under every verb.
func (c CounterKey) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }
