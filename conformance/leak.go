package conformance

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/runlimit/runlimit/domain"
)

// Every error a store returns may reach a log, a JSON response or a
// debugger's dump, so none may show a subject key: not in its message, not
// in an exported field. The suite keeps each error a case's store returns
// (fixture.guard) and, when the case ends, looks for the bytes of every key
// the case made in the ways a careless store prints them.
//
// A key is shown as raw bytes (bare, in a Go-quoted string as %q and %#v
// print a string of them, or in PostgreSQL's bytea escape format), hex
// (contiguous or split by spaces, colons or dashes, as "% x" and
// fingerprint notation print it), base64, base32, a byte array printed by
// fmt or encoding/json, 8 of its bytes read as a 64-bit integer (a lock id
// taken from the key itself), or as the numbers leaknumbers.go describes.
//
// Every one of these forms is a string made from the key alone, so a
// case's keyIndex makes each key's forms once, the first time an error is
// scanned after the key was made, and files them by their first bytes:
// each way of printing an error is then read once, position by position,
// for the forms of all the case's keys together.

// keyLeakWindow is how many consecutive key bytes count as showing a key:
// enough that random bytes never match by chance (one chance in 2^48 for
// each place a message could show them), few enough to catch a key
// printed in part: the last 16 bytes of a counter key, or a short id of
// its first 6 bytes in 12 hex digits, as Docker shortens a container's.
const keyLeakWindow = 6

// keyIntWindow is how many key bytes a 64-bit integer holds: a lock id
// read from the key itself.
const keyIntWindow = 8

// keyIntDigits is the fewest decimal digits of a 64-bit integer that counts
// as showing a key: a short number (a window of mostly zero bytes) could
// be anything; a long one is the key.
const keyIntDigits = 15

// How a text shows a key.
const (
	shownAsBytes       = "its bytes"
	shownQuoted        = "its bytes in a quoted string"
	shownAsBytea       = "its bytes in PostgreSQL's bytea escape format"
	shownInHex         = "its bytes in hex"
	shownAsByteNumbers = "its bytes as numbers (a byte array printed by fmt or encoding/json)"
	shownAsInt64       = "8 of its bytes as a 64-bit integer"
	shownReversedHex   = "its bytes in reverse order in hex (a little-endian integer printed in hex)"
	shownInBase64      = "its bytes in base64"
	shownInBase32      = "its bytes in base32"
)

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

// keyForm is one string that shows a key: the key's place in its index,
// the text, and how it shows the key.
type keyForm struct {
	key  int
	text string
	how  string
}

// formSet files key forms by their first width bytes, each form at least
// width bytes long, so that find reads a text once for all of them.
type formSet struct {
	width int
	forms map[string][]keyForm
}

func newFormSet(width int) formSet {
	return formSet{width: width, forms: make(map[string][]keyForm)}
}

func (s formSet) add(f keyForm) {
	p := f.text[:s.width]
	s.forms[p] = append(s.forms[p], f)
}

// find returns the first form of s that text holds, by where it starts.
func (s formSet) find(text string) (keyForm, bool) {
	if len(s.forms) == 0 {
		return keyForm{}, false
	}
	for i := 0; i+s.width <= len(text); i++ {
		for _, f := range s.forms[text[i:i+s.width]] {
			if strings.HasPrefix(text[i:], f.text) {
				return f, true
			}
		}
	}
	return keyForm{}, false
}

// keyWindow is keyLeakWindow consecutive key bytes.
type keyWindow [keyLeakWindow]byte

// keyIndex holds the forms of a case's keys.
type keyIndex struct {
	keys []domain.SubjectKey
	// bytes holds the keys' windows as raw bytes, looked for in a text,
	// in the strings it quotes and in its bytea escapes resolved.
	bytes formSet
	// encoded holds the forms looked for in a text as it is: 64-bit
	// integers and base64.
	encoded formSet
	// lower holds the forms looked for in a text in lower case: hex,
	// byte arrays, base32.
	lower formSet
	// bareHex holds the hex forms, looked for in a text in lower case
	// without hex separators.
	bareHex formSet
	// windows and reversed give, for each window of a key's bytes (and of
	// them reversed), the keys that hold it.
	windows, reversed map[keyWindow][]int
}

func newKeyIndex() *keyIndex {
	return &keyIndex{
		bytes:    newFormSet(keyLeakWindow),
		encoded:  newFormSet(keyIntDigits),
		lower:    newFormSet(2*keyLeakWindow - 1), // six bytes in decimal, comma-separated, at their shortest
		bareHex:  newFormSet(2 * keyLeakWindow),
		windows:  make(map[keyWindow][]int),
		reversed: make(map[keyWindow][]int),
	}
}

// add files the forms of key k.
func (x *keyIndex) add(k domain.SubjectKey) {
	id := len(x.keys)
	x.keys = append(x.keys, k)
	b := k.Bytes()
	rev := b
	slices.Reverse(rev[:])
	form := func(s formSet, text, how string) { s.add(keyForm{key: id, text: text, how: how}) }
	for i := 0; i+keyLeakWindow <= len(b); i++ {
		w := b[i : i+keyLeakWindow]
		x.windows[keyWindow(w)] = append(x.windows[keyWindow(w)], id)
		x.reversed[keyWindow(rev[i:i+keyLeakWindow])] = append(x.reversed[keyWindow(rev[i:i+keyLeakWindow])], id)
		form(x.bytes, string(w), shownAsBytes)
		h := hex.EncodeToString(w)
		form(x.lower, h, shownInHex)
		form(x.bareHex, h, shownInHex)
		rh := hex.EncodeToString(rev[i : i+keyLeakWindow])
		form(x.lower, rh, shownReversedHex)
		form(x.bareHex, rh, shownReversedHex)
		dec := make([]string, len(w))
		gox := make([]string, len(w))
		for j, c := range w {
			dec[j] = strconv.FormatUint(uint64(c), 10)
			gox[j] = "0x" + strconv.FormatUint(uint64(c), 16)
		}
		for _, s := range []string{strings.Join(dec, ","), strings.Join(dec, " "), strings.Join(gox, ", ")} {
			form(x.lower, s, shownAsByteNumbers)
		}
		if i+keyIntWindow > len(b) {
			continue
		}
		iw := b[i : i+keyIntWindow]
		for _, n := range []uint64{binary.BigEndian.Uint64(iw), binary.LittleEndian.Uint64(iw)} {
			for _, d := range []string{strconv.FormatUint(n, 10), strconv.FormatInt(int64(n), 10)} {
				if len(d) >= keyIntDigits {
					form(x.encoded, d, shownAsInt64)
				}
			}
		}
	}
	// Base64 groups three bytes into four characters, so the key's
	// encoding depends on where it starts in what was encoded: each of the
	// three alignments.
	for off := range 3 {
		chunk := b[off : off+27]
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			form(x.encoded, enc.EncodeToString(chunk), shownInBase64)
		}
	}
	// Base32 groups five bytes into eight characters: five alignments, in
	// either alphabet and either case.
	for off := range 5 {
		chunk := b[off : off+25]
		for _, enc := range []*base32.Encoding{base32.StdEncoding, base32.HexEncoding} {
			form(x.lower, strings.ToLower(enc.EncodeToString(chunk)), shownInBase32)
		}
	}
}

// shown reports which key of x text shows and how, or "" when it shows
// none.
func (x *keyIndex) shown(text string) (domain.SubjectKey, string) {
	if len(x.keys) == 0 {
		return domain.SubjectKey{}, ""
	}
	if f, ok := x.bytes.find(text); ok {
		return x.keys[f.key], f.how
	}
	for _, u := range unquotedStrings(text) {
		if f, ok := x.bytes.find(u); ok {
			return x.keys[f.key], shownQuoted
		}
	}
	if bytea := byteaUnescaped(text); bytea != "" {
		if f, ok := x.bytes.find(bytea); ok {
			return x.keys[f.key], shownAsBytea
		}
	}
	if f, ok := x.encoded.find(text); ok {
		return x.keys[f.key], f.how
	}
	lower := strings.ToLower(text)
	if f, ok := x.lower.find(lower); ok {
		return x.keys[f.key], f.how
	}
	if bareHex := hexSeparators.Replace(lower); bareHex != lower {
		if f, ok := x.bareHex.find(bareHex); ok {
			return x.keys[f.key], f.how
		}
	}
	if id, how := x.shownAsNumbers(text); how != "" {
		return x.keys[id], how
	}
	return domain.SubjectKey{}, ""
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
	if !strings.Contains(text, `"`) {
		return nil
	}
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
	if !strings.Contains(text, `\`) || !byteaEscape.MatchString(text) {
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

// keyLeak describes, without printing them, the first key of the case
// that err shows, or returns "" when it shows none. Renderings with the
// same text are read once: what one does not show, the other does not.
func (l *oplog) keyLeak(err error) string {
	renderings := errorRenderings(err)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.index == nil {
		l.index = newKeyIndex()
	}
	for _, k := range l.made[len(l.index.keys):] {
		l.index.add(k)
	}
	read := make(map[string]bool, len(renderings))
	for _, r := range renderings {
		if read[r.text] {
			continue
		}
		read[r.text] = true
		if k, how := l.index.shown(r.text); how != "" {
			return fmt.Sprintf("%s shows the subject key of %s: %s", r.how, l.keys[k], how)
		}
	}
	return ""
}
