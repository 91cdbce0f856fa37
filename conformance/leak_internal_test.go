package conformance

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// keyPrinter prints (part of) a key as a careless store does; r picks
// where in the key, and with what around it.
type keyPrinter struct {
	name  string
	print func(b [32]byte, r *mrand.Rand) string
}

// keyPart returns n consecutive bytes of b from a place r picks.
func keyPart(b [32]byte, n int, r *mrand.Rand) []byte {
	i := r.IntN(len(b) - n + 1)
	return b[i : i+n]
}

// keyPrinters prints a key in every way the scan looks for, and in the
// ways the broken stores' errors do.
var keyPrinters = []keyPrinter{
	{"raw bytes", func(b [32]byte, r *mrand.Rand) string { return string(keyPart(b, keyLeakWindow+r.IntN(3), r)) }},
	{"%q", func(b [32]byte, r *mrand.Rand) string { return fmt.Sprintf("%q", string(b[:])) }},
	{"%#v of a string field", func(b [32]byte, r *mrand.Rand) string {
		return fmt.Sprintf("%#v", struct{ Key string }{string(b[:])})
	}},
	{"%#v of a byte slice", func(b [32]byte, r *mrand.Rand) string { return fmt.Sprintf("%#v", keyPart(b, 8, r)) }},
	{"%v of a byte slice", func(b [32]byte, r *mrand.Rand) string { return fmt.Sprintf("%v", keyPart(b, 8, r)) }},
	{"json of a byte array", func(b [32]byte, r *mrand.Rand) string {
		j, _ := json.Marshal(b)
		return string(j)
	}},
	{"json of a byte slice", func(b [32]byte, r *mrand.Rand) string {
		j, _ := json.Marshal(struct{ Key []byte }{b[:]})
		return string(j)
	}},
	{"hex", func(b [32]byte, r *mrand.Rand) string { return hex.EncodeToString(b[:]) }},
	{"short id", func(b [32]byte, r *mrand.Rand) string { return hex.EncodeToString(b[:keyLeakWindow]) }},
	{"upper-case hex", func(b [32]byte, r *mrand.Rand) string { return fmt.Sprintf("%X", keyPart(b, 10, r)) }},
	{"spaced hex", func(b [32]byte, r *mrand.Rand) string { return fmt.Sprintf("% x", b[:]) }},
	{"fingerprint hex", func(b [32]byte, r *mrand.Rand) string {
		return strings.ReplaceAll(fmt.Sprintf("% X", keyPart(b, 12, r)), " ", ":")
	}},
	{"base64", func(b [32]byte, r *mrand.Rand) string {
		pre := make([]byte, r.IntN(4))
		return base64.StdEncoding.EncodeToString(append(pre, b[:]...))
	}},
	{"url base64", func(b [32]byte, r *mrand.Rand) string {
		return base64.RawURLEncoding.EncodeToString(append([]byte("k:"), b[:]...))
	}},
	{"base32", func(b [32]byte, r *mrand.Rand) string {
		pre := make([]byte, r.IntN(6))
		return base32.StdEncoding.EncodeToString(append(pre, b[:]...))
	}},
	{"lower-case hex base32", func(b [32]byte, r *mrand.Rand) string {
		return strings.ToLower(base32.HexEncoding.EncodeToString(append([]byte{7}, b[:]...)))
	}},
	{"int64 lock id", func(b [32]byte, r *mrand.Rand) string {
		return fmt.Sprint(int64(binary.BigEndian.Uint64(keyPart(b, keyIntWindow, r))))
	}},
	{"little-endian uint64", func(b [32]byte, r *mrand.Rand) string {
		return fmt.Sprint(binary.LittleEndian.Uint64(keyPart(b, keyIntWindow, r)))
	}},
	{"little-endian hex", func(b [32]byte, r *mrand.Rand) string {
		return fmt.Sprintf("%#x", binary.LittleEndian.Uint64(keyPart(b, keyIntWindow, r)))
	}},
	{"one big decimal", func(b [32]byte, r *mrand.Rand) string { return new(big.Int).SetBytes(b[:]).String() }},
	{"six bytes as one decimal", func(b [32]byte, r *mrand.Rand) string {
		w := keyPart(b, keyLeakWindow, r)
		for w[0] == 0 { // a leading zero byte leaves five bytes, which show nothing
			w = keyPart(b, keyLeakWindow, r)
		}
		return new(big.Int).SetBytes(w).String()
	}},
	{"one big decimal, reversed", func(b [32]byte, r *mrand.Rand) string {
		rev := slices.Clone(keyPart(b, 10, r))
		slices.Reverse(rev)
		return new(big.Int).SetBytes(rev).String()
	}},
	{"32-bit words", func(b [32]byte, r *mrand.Rand) string {
		w := keyPart(b, 8, r)
		return fmt.Sprintf("%d/%d", binary.BigEndian.Uint32(w), binary.BigEndian.Uint32(w[4:]))
	}},
	{"little-endian 32-bit words", func(b [32]byte, r *mrand.Rand) string {
		w := keyPart(b, 12, r)
		return fmt.Sprintf("%d, %d, %d", binary.LittleEndian.Uint32(w), binary.LittleEndian.Uint32(w[4:]), binary.LittleEndian.Uint32(w[8:]))
	}},
	{"bytea escape", func(b [32]byte, r *mrand.Rand) string {
		var s strings.Builder
		for _, c := range b {
			switch {
			case c == '\\':
				s.WriteString(`\\`)
			case c < 0x20 || c > 0x7e:
				fmt.Fprintf(&s, `\%03o`, c)
			default:
				s.WriteByte(c)
			}
		}
		return s.String()
	}},
}

// surround puts what shows a key in a message, as an error would.
func surround(shown string, r *mrand.Rand) string {
	pre := []string{"", "counter ", "store: key=", `{"Key":`, "lock 1234 on "}
	post := []string{"", ": context canceled", " (nothing consumed)", "}", " - 42"}
	return pre[r.IntN(len(pre))] + shown + post[r.IntN(len(post))]
}

func randomKeys(n int) []domain.SubjectKey {
	ks := make([]domain.SubjectKey, n)
	for i := range ks {
		var b [32]byte
		_, _ = rand.Read(b[:])
		ks[i] = domain.SubjectKeyFromBytes(b)
	}
	return ks
}

// TestKeyIndexFindsEveryPrintedKey prints keys in every way the scan
// looks for and requires keyIndex to find the key each shows, as the
// reference scan does.
func TestKeyIndexFindsEveryPrintedKey(t *testing.T) {
	t.Parallel()
	r := mrand.New(mrand.NewPCG(1, 2))
	for _, p := range keyPrinters {
		// Each parallel subtest gets a generator of its own, seeded here:
		// they must not share r.
		seed := r.Uint64()
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			r := mrand.New(mrand.NewPCG(seed, 3))
			for range propertyRounds(200) {
				ks := randomKeys(1 + r.IntN(4))
				x := newKeyIndex()
				for _, k := range ks {
					x.add(k)
				}
				k := ks[r.IntN(len(ks))]
				text := surround(p.print(k.Bytes(), r), r)
				require.NotEmpty(t, referenceKeyShown(text, k), "the reference scan misses a key printed this way")
				got, how := x.shown(text)
				require.NotEmpty(t, how, "keyIndex misses a key printed this way")
				require.True(t, got == k, "keyIndex names another key than the one shown")
			}
		})
	}
}

// TestKeyIndexAgreesWithTheReference cuts texts that show a key at random
// places and requires keyIndex to find a key in each exactly when the
// reference scan finds one: it catches what the reference catches, and
// flags nothing more.
func TestKeyIndexAgreesWithTheReference(t *testing.T) {
	t.Parallel()
	r := mrand.New(mrand.NewPCG(4, 5))
	shown, clean := 0, 0
	for range propertyRounds(3000) {
		ks := randomKeys(1 + r.IntN(3))
		x := newKeyIndex()
		for _, k := range ks {
			x.add(k)
		}
		p := keyPrinters[r.IntN(len(keyPrinters))]
		text := surround(p.print(ks[r.IntN(len(ks))].Bytes(), r), r)
		i := r.IntN(len(text) + 1)
		j := i + r.IntN(len(text)-i+1)
		cut := text[i:j]
		want := ""
		for _, k := range ks {
			if how := referenceKeyShown(cut, k); how != "" {
				want = how
			}
		}
		_, got := x.shown(cut)
		require.Equal(t, want != "", got != "", "keyIndex and the reference disagree on a text printed as %s", p.name)
		if want != "" {
			shown++
		} else {
			clean++
		}
	}
	// Both outcomes must have been tried for the agreement to mean much.
	require.Positive(t, shown)
	require.Positive(t, clean)
}

// TestKeyLeakFindsKeysMadeAfterAnEarlierScan requires the case's index to
// learn the keys made after it was first built.
func TestKeyLeakFindsKeysMadeAfterAnEarlierScan(t *testing.T) {
	t.Parallel()
	ks := randomKeys(2)
	l := newOplog()
	l.nameKey(ks[0], 0, 1)
	b := ks[1].Bytes()
	err := fmt.Errorf("store: counter %x: %w", b[:], errors.New("context canceled"))
	require.Empty(t, l.keyLeak(err), "the error shows no key the case has made yet")
	l.nameKey(ks[1], 0, 1)
	leak := l.keyLeak(err)
	require.Contains(t, leak, "the subject key of k2: its bytes in hex")
	require.Contains(t, leak, "its message shows")
}

// propertyRounds is how many random cases a property test of the key index
// tries: n, or a tenth of it under the race detector. The index is
// single-threaded code the race detector slows tenfold and has nothing to
// find in; the run without it tries every case, and the suite's runs under
// it still exercise the index from every case's goroutines.
func propertyRounds(n int) int {
	if raceEnabled {
		return n / 10
	}
	return n
}
