package httplimit

import (
	"strconv"
	"time"
)

// Bounds of the structured field values (RFC 9651) the RateLimit fields use.
const (
	// MaxSFInteger is the largest sf-integer: 15 decimal digits. Larger
	// values are written as MaxSFInteger.
	MaxSFInteger = 999_999_999_999_999
	// MaxNameLength is the longest policy name the fields carry, in bytes.
	MaxNameLength = 128
)

// validName reports whether name can be a policy name: 1 to MaxNameLength
// bytes of printable ASCII (0x20 to 0x7E), the characters an sf-string can
// hold. It returns the offset of the first bad byte, or -1.
func validName(name string) (bad int, ok bool) {
	if name == "" || len(name) > MaxNameLength {
		return -1, false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c > 0x7e {
			return i, false
		}
	}
	return -1, true
}

// appendSFString appends s as an sf-string: in double quotes, with '"' and
// '\' escaped by a backslash. It reports false, appending nothing, when s
// holds a byte an sf-string cannot carry (anything outside 0x20 to 0x7E), so
// that no control character, line break or non-ASCII byte ever reaches a
// header.
func appendSFString(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return dst, false
		}
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' || c == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return append(dst, '"'), true
}

// appendSFInteger appends n clamped to 0..MaxSFInteger. The fields only
// carry non-negative counts and seconds, and a count too large to write is
// reported as the largest one that can be written: a client reading it
// waits longer or sends less, never more.
func appendSFInteger(dst []byte, n int64) []byte {
	return strconv.AppendInt(dst, min(max(n, 0), MaxSFInteger), 10)
}

// ceilSeconds rounds d up to whole seconds, 0 for d <= 0: a client told to
// wait 1 s when 1.2 s remain would come back too early.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}
