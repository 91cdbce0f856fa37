package domain

import (
	"crypto/sha256"
	"encoding"
	"fmt"
	"unsafe"
)

// MinSecretLength is the shortest key secret accepted by [NewKeyHasher].
const MinSecretLength = 32

const subjectKeyDomain = "runlimit/subject-key/v1"

// KeyHasher derives [SubjectKey] values with HMAC-SHA-256 under a secret:
// the MAC over "runlimit/subject-key/v1", 0x00, the policy id, 0x00, the scope
// id, 0x00 and the normalized subject. Every replica sharing a store must use
// the same secret; rotating it starts fresh counters.
//
// A KeyHasher is safe for concurrent use, derives a key without allocating,
// and prints as "KeyHasher[redacted]" under every fmt verb. It keeps no copy
// of the raw secret: only the two SHA-256 states after absorbing the padded
// key, which is all HMAC needs. The zero value is invalid: it derives the
// zero [SubjectKey], which every check rejects ([ErrInvalidInput]), so a
// hasher that was never built fails closed before any store is reached.
type KeyHasher struct {
	// st is a *hasherState held as an unsafe.Pointer, so that no printer
	// that walks values by reflection can reach the keyed state, from which
	// every subject key can be computed. fmt prints a host struct's unexported fields without
	// calling their methods; under a verb that does not fit a pointer (%s,
	// %q, %t) it goes on to print the pointed-to struct in full, and spew
	// (testify's diffs) follows pointers. Both print an unsafe.Pointer as
	// its address only. The garbage collector still traces it.
	st unsafe.Pointer
}

// state returns h's keyed state, or nil for the zero KeyHasher.
func (h KeyHasher) state() *hasherState { return (*hasherState)(h.st) }

type hasherState struct {
	inner, outer []byte // marshaled SHA-256 states after the ipad and opad blocks
}

// NewKeyHasher builds a hasher from a raw secret of at least 32 bytes. The
// caller may wipe secret afterwards.
func NewKeyHasher(secret []byte) (KeyHasher, error) {
	if len(secret) < MinSecretLength {
		return KeyHasher{}, ErrSecretTooShort
	}
	const block = 64 // SHA-256 block size
	var pad [block]byte
	if len(secret) > block {
		sum := sha256.Sum256(secret)
		copy(pad[:], sum[:])
		clear(sum[:])
	} else {
		copy(pad[:], secret)
	}
	st := &hasherState{}
	for i := range pad {
		pad[i] ^= 0x36
	}
	st.inner = keyedState(pad[:])
	for i := range pad {
		pad[i] ^= 0x36 ^ 0x5c
	}
	st.outer = keyedState(pad[:])
	clear(pad[:])
	return KeyHasher{st: unsafe.Pointer(st)}, nil
}

func keyedState(pad []byte) []byte {
	h := sha256.New()
	h.Write(pad)
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		// crypto/sha256 always supports marshaling; reaching this is a
		// broken standard library, not a runtime condition.
		panic("runlimit: sha256 state cannot be marshaled: " + err.Error())
	}
	return state
}

// Key derives the subject key of subject under policy p. Normalize subjects
// (case, Unicode form, IP prefix) before calling: different bytes are
// different subjects.
func (h KeyHasher) Key(p Policy, subject []byte) (k SubjectKey) {
	// The bytes are only read, and only while Key runs.
	h.derive(&k, &p, unsafe.String(unsafe.SliceData(subject), len(subject)))
	return k
}

// KeyString is [KeyHasher.Key] for a subject held in a string.
func (h KeyHasher) KeyString(p Policy, subject string) (k SubjectKey) {
	h.derive(&k, &p, subject)
	return k
}

func (h KeyHasher) derive(k *SubjectKey, p *Policy, subject string) {
	st := h.state()
	if st == nil {
		return
	}
	// One digest, this call's own, computes the inner hash and then the
	// outer one. sha256.New is inlined here, so the compiler knows its
	// type, calls its methods directly and keeps it, and the subject, on
	// the stack: no allocation, no pool, and nothing of a subject left
	// behind on the heap. Restoring a keyed state cannot fail, as the same
	// implementation produced it in NewKeyHasher; restoring instead of
	// rebuilding the HMAC saves two block compressions, and restoring the
	// outer state over the inner one replaces the digest whole.
	d := sha256.New()
	restore := d.(encoding.BinaryUnmarshaler)
	_ = restore.UnmarshalBinary(st.inner)
	// The zero Policy's identifiers are empty.
	prefix := subjectKeyDomain + "\x00\x00\x00"
	if p.def != nil {
		prefix = p.def.keyPrefix
	}
	// Write only reads the strings' bytes, and only during the call.
	d.Write(unsafe.Slice(unsafe.StringData(prefix), len(prefix)))
	d.Write(unsafe.Slice(unsafe.StringData(subject), len(subject)))
	// Both sums are written into the caller's key, which Key and KeyString
	// return: the inner one as the outer hash's input, the outer one as
	// the key, masked in place. Building the key in a local array and
	// returning it copied it twice more, 5% of a derivation.
	d.Sum(k.masked[:0])
	_ = restore.UnmarshalBinary(st.outer)
	d.Write(k.masked[:])
	d.Sum(k.masked[:0])
	maskInPlace(&k.masked)
	k.set = true
}

// IsZero reports whether h is the zero value rather than a built hasher.
func (h KeyHasher) IsZero() bool { return h.st == nil }

// String returns "KeyHasher[redacted]".
func (h KeyHasher) String() string { return "KeyHasher" + redacted }

// GoString returns "KeyHasher[redacted]".
func (h KeyHasher) GoString() string { return h.String() }

// Format prints h as "KeyHasher[redacted]" under every verb.
func (h KeyHasher) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(h.String())) }
