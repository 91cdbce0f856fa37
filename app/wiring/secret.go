package wiring

import (
	"fmt"
	"log/slog"
	"unsafe"
)

// redacted is what a set [Secret] prints as.
const redacted = "[redacted]"

// Secret is a string that no printer reveals: a database URL holding a
// password, a key secret. Under every fmt verb, encoding/json and other
// text encoders, and log/slog it prints as "[redacted]" (the empty
// secret as ""); printers that walk values by reflection, such as fmt on
// a host struct's unexported fields or the spew dumps in testify's
// failure diffs, see only an address. Read the value with [Secret.Reveal].
//
// The zero value is the unset secret, which no value was given to (see
// [Secret.IsZero]). Secrets are immutable and safe to copy and share
// between goroutines; copies reveal the same value.
type Secret struct {
	// p is a *string held as an unsafe.Pointer. A string field, or a pointer
	// to one, is printed in full by reflection: fmt prints the fields of a
	// struct nested in a host's unexported field without calling their
	// methods, and spew never calls them. Both print an unsafe.Pointer as
	// its address and do not follow it.
	p unsafe.Pointer
}

// NewSecret wraps value. The empty string gives a secret set to nothing,
// which is not the zero Secret: see [Secret.IsZero].
func NewSecret(value string) Secret {
	return Secret{p: unsafe.Pointer(&value)}
}

// Reveal returns the value. Never log it.
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *(*string)(s.p)
}

// IsZero reports whether s is the zero Secret, which no value was given
// to. A Secret from [NewSecret] or [Secret.UnmarshalText] is never zero,
// even when its value is empty, as an unset environment variable or an
// empty field of a configuration file makes it: the wiring refuses a
// DatabaseURL or KeySecret set to an empty string rather than read the
// key secret from another source or choose the memory backend, which
// would give replicas different keys or counters of their own.
func (s Secret) IsZero() bool { return s.p == nil }

// String returns "[redacted]", or "" when the value is empty, set or not:
// there is nothing to withhold.
func (s Secret) String() string {
	if s.Reveal() == "" {
		return ""
	}
	return redacted
}

// GoString is [Secret.String], for %#v.
func (s Secret) GoString() string { return s.String() }

// Format prints [Secret.String] under every verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// MarshalText returns [Secret.String]: encoding/json and the text-based
// encoders of configuration formats print "[redacted]".
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText sets s to text, so that configuration decoders (JSON
// strings, environment and flag libraries that accept an
// encoding.TextUnmarshaler) can fill a Secret.
func (s *Secret) UnmarshalText(text []byte) error {
	*s = NewSecret(string(text))
	return nil
}

// LogValue returns [Secret.String], for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
