package conformance

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/runlimit/runlimit/domain"
)

// Every error a store returns may reach a log, a JSON response or a
// debugger's dump, so none may show a subject key: not in its message, not
// in an exported field. The suite keeps each error a case's store returns
// (fixture.guard) and, when the case ends, looks for the bytes of every key
// the case made in the ways a careless store prints them.

// keyLeakWindow is how many consecutive key bytes count as showing a key:
// enough that random bytes never match by chance (one chance in 2^48 for
// each place a message could show them), few enough to catch a key
// printed in part: the last 16 bytes of a counter key, or a short id of
// its first 6 bytes in 12 hex digits, as Docker shortens a container's.
const keyLeakWindow = 6

// keyIntWindow is how many key bytes a 64-bit integer holds: a lock id
// read from the key itself.
const keyIntWindow = 8

// rendering is one way an error is printed: how, and the text.
type rendering struct{ how, text string }

// errorRenderings returns the ways err may be printed or serialised: its
// message, fmt's %+v, and fmt's %#v and encoding/json of every error in its
// chain (whose exported fields json.Marshal and spew print).
func errorRenderings(err error) []rendering {
	out := []rendering{{"its message", err.Error()}, {"fmt's %+v", fmt.Sprintf("%+v", err)}}
	seen := 0
	var walk func(e error)
	walk = func(e error) {
		if e == nil || seen > 64 {
			return
		}
		seen++
		out = append(out, rendering{fmt.Sprintf("fmt's %%#v of the %T in its chain", e), fmt.Sprintf("%#v", e)})
		if b, jerr := json.Marshal(e); jerr == nil {
			out = append(out, rendering{fmt.Sprintf("encoding/json of the %T in its chain", e), string(b)})
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}

// keyShown reports how text shows part of key k, or "" when it does not:
// as raw bytes (bare or in a Go-quoted string, as %q and %#v print a
// string of them), hex (contiguous or split by spaces, colons or dashes, as
// "% x" and fingerprint notation print it), base64, base32, a byte array
// printed by fmt or encoding/json, or 8 of its bytes read as a 64-bit
// integer (a lock id taken from the key itself).
func keyShown(text string, k domain.SubjectKey) string {
	b := k.Bytes()
	lower := strings.ToLower(text)
	bareHex := hexSeparators.Replace(lower)
	unquoted := unquotedStrings(text)
	bytea := byteaUnescaped(text)
	for i := 0; i+keyLeakWindow <= len(b); i++ {
		w := b[i : i+keyLeakWindow]
		if strings.Contains(text, string(w)) {
			return "its bytes"
		}
		for _, u := range unquoted {
			if strings.Contains(u, string(w)) {
				return "its bytes in a quoted string"
			}
		}
		if bytea != "" && strings.Contains(bytea, string(w)) {
			return "its bytes in PostgreSQL's bytea escape format"
		}
		if h := hex.EncodeToString(w); strings.Contains(lower, h) || strings.Contains(bareHex, h) {
			return "its bytes in hex"
		}
		dec := make([]string, len(w))
		gox := make([]string, len(w))
		for j, c := range w {
			dec[j] = fmt.Sprint(c)
			gox[j] = fmt.Sprintf("%#x", c)
		}
		for _, s := range []string{strings.Join(dec, ","), strings.Join(dec, " "), strings.Join(gox, ", ")} {
			if strings.Contains(lower, s) {
				return "its bytes as numbers (a byte array printed by fmt or encoding/json)"
			}
		}
		if i+keyIntWindow > len(b) {
			continue
		}
		iw := b[i : i+keyIntWindow]
		for _, n := range []uint64{binary.BigEndian.Uint64(iw), binary.LittleEndian.Uint64(iw)} {
			for _, d := range []string{strconv.FormatUint(n, 10), strconv.FormatInt(int64(n), 10)} {
				// A short number (a window of mostly zero bytes) could
				// be anything; a long one is the key.
				if len(d) >= 15 && strings.Contains(text, d) {
					return "8 of its bytes as a 64-bit integer"
				}
			}
		}
	}
	if how := keyShownAsNumbers(text, lower, bareHex, b); how != "" {
		return how
	}
	// Base64 groups three bytes into four characters, so the key's
	// encoding depends on where it starts in what was encoded: look for
	// each of the three alignments.
	for off := range 3 {
		chunk := b[off : off+27]
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			if strings.Contains(text, enc.EncodeToString(chunk)) {
				return "its bytes in base64"
			}
		}
	}
	// Base32 groups five bytes into eight characters: five alignments, in
	// either alphabet and either case.
	for off := range 5 {
		chunk := b[off : off+25]
		for _, enc := range []*base32.Encoding{base32.StdEncoding, base32.HexEncoding} {
			if strings.Contains(lower, strings.ToLower(enc.EncodeToString(chunk))) {
				return "its bytes in base32"
			}
		}
	}
	return ""
}

// hexSeparators removes what "% x", hex.Dump and fingerprint notation put
// between hex digits.
var hexSeparators = strings.NewReplacer(" ", "", ":", "", "-", "")

// quotedString matches a double-quoted Go string literal, as %q and %#v
// print a string or a []byte.
var quotedString = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)

// unquotedStrings returns the contents of every Go string literal in text,
// escapes resolved, so that raw key bytes printed as "\x9a\x1b..." are
// found as bytes.
func unquotedStrings(text string) []string {
	var out []string
	for _, q := range quotedString.FindAllString(text, -1) {
		if u, err := strconv.Unquote(q); err == nil && u != q[1:len(q)-1] {
			out = append(out, u)
		}
	}
	return out
}

// byteaEscape matches an escape of PostgreSQL's bytea escape output format
// (bytea_output = 'escape'): a byte as a backslash and three octal digits,
// or a backslash doubled.
var byteaEscape = regexp.MustCompile(`\\(?:[0-3][0-7]{2}|\\)`)

// byteaUnescaped returns text with every bytea escape resolved, so that a
// key a SQL store prints as 'ab\232\033c' is found as bytes, or "" when
// text holds no such escape. Printable bytes stay as they are in that
// format, so an escaped key is a mix of raw characters and escapes that
// neither the raw nor the quoted view matches.
func byteaUnescaped(text string) string {
	if !byteaEscape.MatchString(text) {
		return ""
	}
	return byteaEscape.ReplaceAllStringFunc(text, func(e string) string {
		if e == `\\` {
			return `\`
		}
		n, _ := strconv.ParseUint(e[1:], 8, 8)
		return string([]byte{byte(n)})
	})
}

// keyLeak describes, without printing them, the first key of ks that err
// shows, or returns "" when it shows none.
func keyLeak(err error, ks map[domain.SubjectKey]string) string {
	for _, r := range errorRenderings(err) {
		for k, name := range ks {
			if how := keyShown(r.text, k); how != "" {
				return fmt.Sprintf("%s shows the subject key of %s: %s", r.how, name, how)
			}
		}
	}
	return ""
}
