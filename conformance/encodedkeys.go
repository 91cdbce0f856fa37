package conformance

import (
	"testing"

	"github.com/runlimit/runlimit/domain"
)

// encodedPair is two subject keys, differing in one byte, that a store
// turning key bytes into text meets as one key when its encoding drops or
// folds that byte.
type encodedPair struct {
	name string // how the two differ, for messages
	a, b domain.SubjectKey
}

// encodedPairs returns subject keys that differ in one byte, each pair
// built from a fresh random key: bytes that a store making text keys (a
// memcached key, which may hold no control character, a Redis key sanitised
// for a log-friendly prefix, base64 or the raw bytes in a case-insensitive
// column or collation, a JSON document's key, made valid UTF-8) drops,
// replaces or folds alike, or that a store handing keys to C as strings
// cuts at a zero byte. The byte sits away from the first, where
// PostgreSQL's capacity shard and the memory store's shard come from, so
// that a store keying a map per partition meets both keys in one.
func (f *fixture) encodedPairs(p domain.Policy) []encodedPair {
	pair := func(name string, at int, set func(byte, byte) byte, x, y byte) encodedPair {
		raw := randomKey().Bytes()
		a, b := raw, raw
		a[at], b[at] = set(raw[at], x), set(raw[at], y)
		ka, kb := domain.SubjectKeyFromBytes(a), domain.SubjectKeyFromBytes(b)
		f.log.nameKey(ka, f.partOf(p, ka), f.parts)
		f.log.nameKey(kb, f.partOf(p, kb), f.parts)
		return encodedPair{name, ka, kb}
	}
	whole := func(_, v byte) byte { return v }
	afterZero := func(name string, zero, at int) encodedPair { return f.afterZeroPair(p, name, zero, at) }
	// Base64 turns three bytes into four characters of six bits each;
	// six-bit values 0 and 26 are 'A' and 'a'. Byte 3 of the subject key
	// begins a group when the subject key is encoded alone (its top six
	// bits are a character), and ends one when the 64-byte counter key is
	// (its low six bits are).
	top := func(old, v byte) byte { return v<<2 | old&0x03 }
	low := func(old, v byte) byte { return old&0xc0 | v }
	return []encodedPair{
		pair("differ only in one control byte (0x01 and 0x1f, alike once control characters are dropped or replaced)", 5, whole, 0x01, 0x1f),
		pair("differ only in a space and a tab (alike once whitespace is dropped or replaced)", 9, whole, ' ', '\t'),
		pair("differ only in the case of one character of the subject key's base64 ('A' and 'a')", 3, top, 0, 26),
		pair("differ only in the case of one character of the counter key's base64 ('A' and 'a')", 3, low, 0, 26),
		pair("differ only in the case of one raw byte ('A' and 'a', alike in a case-insensitive column)", 12, whole, 'A', 'a'),
		afterZero("differ only in a byte after a zero byte (alike once cut at it, as a C string is)", 7, 20),
		f.notUTF8Pair(p, "differ only in a byte that is not UTF-8 (0x80 and 0x81, alike once text replaces it with U+FFFD, as JSON does)", 15),
	}
}

// notUTF8Pair is encodedPairs' pair of subject keys that differ only at
// at, in two bytes that are not UTF-8 there: continuation bytes after an
// ASCII byte, which a string made valid (JSON's encoding of a Go string,
// strings.ToValidUTF8) replaces alike.
func (f *fixture) notUTF8Pair(p domain.Policy, name string, at int) encodedPair {
	raw := randomKey().Bytes()
	raw[at-1] = 'x'
	a, b := raw, raw
	a[at], b[at] = 0x80, 0x81
	ka, kb := domain.SubjectKeyFromBytes(a), domain.SubjectKeyFromBytes(b)
	f.log.nameKey(ka, f.partOf(p, ka), f.parts)
	f.log.nameKey(kb, f.partOf(p, kb), f.parts)
	return encodedPair{name, ka, kb}
}

// afterZeroPair is encodedPairs' pair of subject keys that share a zero
// byte at zero and differ in one byte after it, at at.
func (f *fixture) afterZeroPair(p domain.Policy, name string, zero, at int) encodedPair {
	raw := randomKey().Bytes()
	raw[zero] = 0
	a, b := raw, raw
	b[at] ^= 0x5a
	ka, kb := domain.SubjectKeyFromBytes(a), domain.SubjectKeyFromBytes(b)
	f.log.nameKey(ka, f.partOf(p, ka), f.parts)
	f.log.nameKey(kb, f.partOf(p, kb), f.parts)
	return encodedPair{name, ka, kb}
}

func testEncodedLookalikeCounters(t *testing.T, f *fixture) {
	const g = "lookalikes: subject keys that differ only in a byte an encoding drops or folds count in counters of their own"
	p := f.policy(2, window)
	for _, pr := range f.encodedPairs(p) {
		f.allow(f.check(p, pr.a), 1, g+": two keys that "+pr.name+" (the first's first unit)")
		f.allow(f.check(p, pr.b), 1, g+": two keys that "+pr.name+" (the second starts a window of its own)")
		f.allow(f.check(p, pr.a), 0, g+": two keys that "+pr.name+" (the first's counter holds its own unit only)")
	}
}
