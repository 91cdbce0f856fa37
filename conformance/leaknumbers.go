package conformance

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math/big"
	"regexp"
	"slices"
	"strings"
)

// A key is also shown when its bytes are read as numbers a store prints:
// a little-endian word in hex (a hash table's slot, a lock id from
// binary.LittleEndian), the whole key as one big decimal integer (an id
// made with math/big), or consecutive 32-bit words in decimal ("bucket
// 2812733/99120455"). keyShownAsNumbers finds these; keyShown finds the
// rest.

// decimalRun matches a run of decimal digits.
var decimalRun = regexp.MustCompile(`[0-9]+`)

// wordSeparator is the most text between two numbers that keeps them one
// sequence of words: "/", ", ", " - ".
const wordSeparator = 3

// keyShownAsNumbers reports how text (with lower and bareHex, its lower-case
// form and that without hex separators, as keyShown makes them) shows key
// bytes b as numbers, or "" when it does not.
func keyShownAsNumbers(text, lower, bareHex string, b [32]byte) string {
	rev := b
	slices.Reverse(rev[:])
	for i := 0; i+keyLeakWindow <= len(rev); i++ {
		if h := hex.EncodeToString(rev[i : i+keyLeakWindow]); strings.Contains(lower, h) || strings.Contains(bareHex, h) {
			return "its bytes in reverse order in hex (a little-endian integer printed in hex)"
		}
	}
	runs := decimalRun.FindAllStringIndex(text, -1)
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
		if j-i >= 2 && wordsShowKey(text, runs[i:j], b) {
			return "its bytes read as consecutive 32-bit integers"
		}
		i = j
	}
	return ""
}

// wordsShowKey reports whether the decimal runs of text, read as 32-bit
// words big- or little-endian, hold keyLeakWindow consecutive bytes of b.
func wordsShowKey(text string, runs [][]int, b [32]byte) bool {
	var be, le []byte
	for _, r := range runs {
		n, ok := new(big.Int).SetString(text[r[0]:r[1]], 10)
		if !ok || !n.IsUint64() || n.Uint64() > 1<<32-1 {
			// Not a 32-bit word: start a new sequence after it.
			if wordsHold(be, b) || wordsHold(le, b) {
				return true
			}
			be, le = be[:0], le[:0]
			continue
		}
		be = binary.BigEndian.AppendUint32(be, uint32(n.Uint64()))
		le = binary.LittleEndian.AppendUint32(le, uint32(n.Uint64()))
	}
	return wordsHold(be, b) || wordsHold(le, b)
}

// wordsHold reports whether words holds keyLeakWindow consecutive bytes of
// b.
func wordsHold(words []byte, b [32]byte) bool {
	for i := 0; i+keyLeakWindow <= len(words); i++ {
		if bytes.Contains(b[:], words[i:i+keyLeakWindow]) {
			return true
		}
	}
	return false
}
