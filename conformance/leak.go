package conformance

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/runlimit/runlimit/domain"
)

// Every error a store returns may reach a log, a JSON response or a
// debugger's dump, so none may show a subject key: not in its message, not
// in an exported field. The suite keeps each error a case's store returns
// (fixture.guard) and, when the case ends, looks for the bytes of every key
// the case made in the ways a careless store prints them.

// keyLeakWindow is how many consecutive key bytes count as showing a key:
// enough that random bytes never match by chance, few enough to catch a
// key printed in part (the last 16 bytes of a counter key, say).
const keyLeakWindow = 8

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
// as raw bytes, hex, base64, or a byte array printed by fmt or
// encoding/json.
func keyShown(text string, k domain.SubjectKey) string {
	b := k.Bytes()
	lower := strings.ToLower(text)
	for i := 0; i+keyLeakWindow <= len(b); i++ {
		w := b[i : i+keyLeakWindow]
		if strings.Contains(text, string(w)) {
			return "its bytes"
		}
		if strings.Contains(lower, hex.EncodeToString(w)) {
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
	return ""
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
