package conformance

// The scan as it was before keyIndex, kept as the reference keyIndex must
// agree with: it made every form of every key for each text it read.

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/runlimit/runlimit/domain"
)

func referenceKeyShown(text string, k domain.SubjectKey) string {
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
	if how := referenceKeyShownAsNumbers(text, lower, bareHex, b); how != "" {
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

var referenceDecimalRun = regexp.MustCompile(`[0-9]+`)

// referenceKeyShownAsNumbers reports how text (with lower and bareHex, its lower-case
// form and that without hex separators, as referenceKeyShown makes them) shows key
// bytes b as numbers, or "" when it does not.
func referenceKeyShownAsNumbers(text, lower, bareHex string, b [32]byte) string {
	rev := b
	slices.Reverse(rev[:])
	for i := 0; i+keyLeakWindow <= len(rev); i++ {
		if h := hex.EncodeToString(rev[i : i+keyLeakWindow]); strings.Contains(lower, h) || strings.Contains(bareHex, h) {
			return "its bytes in reverse order in hex (a little-endian integer printed in hex)"
		}
	}
	runs := referenceDecimalRun.FindAllStringIndex(text, -1)
	for _, r := range runs {
		n, ok := new(big.Int).SetString(text[r[0]:r[1]], 10)
		if !ok {
			continue
		}
		nb := n.Bytes()
		if len(nb) >= keyLeakWindow && (bytes.Contains(b[:], nb) || bytes.Contains(rev[:], nb)) {
			return "its bytes read as one decimal integer"
		}
	}
	// Sequences of at least two 32-bit words, each run of a sequence at
	// most wordSeparator bytes after the one before.
	for i := 0; i < len(runs); {
		j := i + 1
		for j < len(runs) && runs[j][0]-runs[j-1][1] <= wordSeparator {
			j++
		}
		if j-i >= 2 && referenceWordsShowKey(text, runs[i:j], b) {
			return "its bytes read as consecutive 32-bit integers"
		}
		i = j
	}
	return ""
}

// referenceWordsShowKey reports whether the decimal runs of text, read as 32-bit
// words big- or little-endian, hold keyLeakWindow consecutive bytes of b.
func referenceWordsShowKey(text string, runs [][]int, b [32]byte) bool {
	var be, le []byte
	for _, r := range runs {
		n, ok := new(big.Int).SetString(text[r[0]:r[1]], 10)
		if !ok || !n.IsUint64() || n.Uint64() > 1<<32-1 {
			// Not a 32-bit word: start a new sequence after it.
			if referenceWordsHold(be, b) || referenceWordsHold(le, b) {
				return true
			}
			be, le = be[:0], le[:0]
			continue
		}
		be = binary.BigEndian.AppendUint32(be, uint32(n.Uint64()))
		le = binary.LittleEndian.AppendUint32(le, uint32(n.Uint64()))
	}
	return referenceWordsHold(be, b) || referenceWordsHold(le, b)
}

// referenceWordsHold reports whether words holds keyLeakWindow consecutive bytes of
// b.
func referenceWordsHold(words []byte, b [32]byte) bool {
	for i := 0; i+keyLeakWindow <= len(words); i++ {
		if bytes.Contains(b[:], words[i:i+keyLeakWindow]) {
			return true
		}
	}
	return false
}
