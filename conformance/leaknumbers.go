package conformance

import (
	"bytes"
	"encoding/binary"
	"math/big"
	"slices"
	"strconv"
)

// A key is also shown when its bytes are read as numbers a store prints:
// a little-endian word in hex (a hash table's slot, a lock id from
// binary.LittleEndian), the whole key as one big decimal integer (an id
// made with math/big), or consecutive 32-bit words in decimal ("bucket
// 2812733/99120455"). The key's bytes reversed in hex are among the forms
// keyIndex.add files; shownAsNumbers finds the rest.

// wordSeparator is the most text between two numbers that keeps them one
// sequence of words: "/", ", ", " - ".
const wordSeparator = 3

// keyWindowDigits is the fewest decimal digits of a number whose bytes
// hold keyLeakWindow bytes: 10^12 is still below 2^40.
const keyWindowDigits = 13

// decimalRuns returns where each run of decimal digits of text starts and
// ends.
func decimalRuns(text string) [][2]int {
	var runs [][2]int
	for i := 0; i < len(text); {
		if text[i] < '0' || text[i] > '9' {
			i++
			continue
		}
		j := i + 1
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		runs = append(runs, [2]int{i, j})
		i = j
	}
	return runs
}

// shownAsNumbers reports which key of x (by its place in x.keys) text
// shows as one big decimal integer or as 32-bit words, and how, or "" when
// it shows none.
func (x *keyIndex) shownAsNumbers(text string) (int, string) {
	runs := decimalRuns(text)
	for _, r := range runs {
		if r[1]-r[0] < keyWindowDigits {
			continue
		}
		n, ok := new(big.Int).SetString(text[r[0]:r[1]], 10)
		if !ok {
			continue
		}
		nb := n.Bytes()
		if len(nb) < keyLeakWindow {
			continue
		}
		// A key holds nb only where it holds nb's first window.
		for _, id := range x.windows[keyWindow(nb[:keyLeakWindow])] {
			if b := x.keys[id].Bytes(); bytes.Contains(b[:], nb) {
				return id, "its bytes read as one decimal integer"
			}
		}
		for _, id := range x.reversed[keyWindow(nb[:keyLeakWindow])] {
			rev := x.keys[id].Bytes()
			slices.Reverse(rev[:])
			if bytes.Contains(rev[:], nb) {
				return id, "its bytes read as one decimal integer"
			}
		}
	}
	// Sequences of at least two 32-bit words, each run of a sequence at
	// most wordSeparator bytes after the one before.
	for i := 0; i < len(runs); {
		j := i + 1
		for j < len(runs) && runs[j][0]-runs[j-1][1] <= wordSeparator {
			j++
		}
		if j-i >= 2 {
			if id, ok := x.wordsShowKey(text, runs[i:j]); ok {
				return id, "its bytes read as consecutive 32-bit integers"
			}
		}
		i = j
	}
	return 0, ""
}

// wordsShowKey reports which key of x holds keyLeakWindow consecutive bytes
// of the decimal runs of text read as 32-bit words, big- or little-endian.
func (x *keyIndex) wordsShowKey(text string, runs [][2]int) (int, bool) {
	var be, le []byte
	for _, r := range runs {
		n, err := strconv.ParseUint(text[r[0]:r[1]], 10, 32)
		if err != nil {
			// Not a 32-bit word: start a new sequence after it.
			if id, ok := x.wordsHold(be, le); ok {
				return id, true
			}
			be, le = be[:0], le[:0]
			continue
		}
		be = binary.BigEndian.AppendUint32(be, uint32(n))
		le = binary.LittleEndian.AppendUint32(le, uint32(n))
	}
	return x.wordsHold(be, le)
}

// wordsHold reports which key of x holds keyLeakWindow consecutive bytes of
// words be or le.
func (x *keyIndex) wordsHold(be, le []byte) (int, bool) {
	for _, words := range [][]byte{be, le} {
		for i := 0; i+keyLeakWindow <= len(words); i++ {
			if ids := x.windows[keyWindow(words[i:i+keyLeakWindow])]; len(ids) > 0 {
				return ids[0], true
			}
		}
	}
	return 0, false
}
