package domain

import (
	"bytes"
	"fmt"
)

const redacted = "[redacted]"

// SubjectKey is the 32-byte HMAC of a normalized subject (an email, an
// account id, a network prefix) under one policy and scope. Stores keep it
// instead of the subject, so raw subjects never reach storage, logs or
// metrics.
//
// A SubjectKey never prints its bytes: every fmt verb shows "[redacted]".
// The zero value is invalid; derive one with [KeyHasher.Key].
type SubjectKey struct {
	b   [32]byte
	set bool
}

// SubjectKeyFromBytes rebuilds a subject key that a store read back from
// storage. Applications derive keys with [KeyHasher.Key] instead.
func SubjectKeyFromBytes(b [32]byte) SubjectKey { return SubjectKey{b: b, set: true} }

// Bytes returns the key bytes for a storage adapter to persist. Never log
// them.
func (k SubjectKey) Bytes() [32]byte { return k.b }

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
type CounterKey struct {
	b [CounterKeySize]byte
}

// NewCounterKey joins a fingerprint and a subject key.
func NewCounterKey(f Fingerprint, k SubjectKey) CounterKey {
	var c CounterKey
	copy(c.b[:32], f[:])
	copy(c.b[32:], k.b[:])
	return c
}

// Fingerprint returns the first 32 bytes of the key.
func (c CounterKey) Fingerprint() Fingerprint { return Fingerprint(c.b[:32]) }

// SubjectKey returns the last 32 bytes of the key.
func (c CounterKey) SubjectKey() SubjectKey { return SubjectKey{b: [32]byte(c.b[32:]), set: true} }

// Bytes returns the key bytes for a storage adapter. Never log them.
func (c CounterKey) Bytes() [CounterKeySize]byte { return c.b }

// Compare orders counter keys byte-wise; it returns -1, 0 or +1. Stores lock
// keys in this order so that opposite-order batches cannot deadlock.
func (c CounterKey) Compare(other CounterKey) int { return bytes.Compare(c.b[:], other.b[:]) }

// String returns "CounterKey[redacted]".
func (c CounterKey) String() string { return "CounterKey" + redacted }

// GoString returns "CounterKey[redacted]".
func (c CounterKey) GoString() string { return c.String() }

// Format prints c as "CounterKey[redacted]" under every verb.
func (c CounterKey) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }
