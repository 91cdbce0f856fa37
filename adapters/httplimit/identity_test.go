package httplimit_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

func TestAppendIdentity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"ascii lower-cased", "Alice@Example.COM", "alice@example.com"},
		{"surrounding white space trimmed", " \t alice@example.com \r\n", "alice@example.com"},
		{"unicode white space trimmed", "\u00a0\u2003alice\u3000", "alice"},
		{"interior space kept", "John  Smith", "john  smith"},
		{"kelvin sign is k", "\u212Aate", "kate"},
		{"long s is s", "\u017Fam", "sam"},
		{"final sigma is sigma", "\u039F\u03A3\u03C2", "\u03bf\u03c3\u03c3"},
		{"german sharp s capital", "\u1E9E", "\u00df"},
		{"cherokee folds together", "\u13A0\uAB70", "\uAB70\uAB70"},
		{"dotted capital and dotless i are i", "\u0130\u0131", "ii"},
		{"digits and symbols kept", "user+tag_1@example.test", "user+tag_1@example.test"},
		{"replacement character is a character", "\uFFFD", "\uFFFD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := httplimit.AppendIdentity([]byte("p:"), tc.in)
			require.NoError(t, err)
			require.Equal(t, "p:"+tc.want, string(got))
		})
	}
}

func TestAppendIdentityRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     httplimit.IdentityError
	}{
		{"empty", "", httplimit.IdentityError{Problem: httplimit.IdentityEmpty}},
		{"only white space", " \t\u00a0", httplimit.IdentityError{Problem: httplimit.IdentityEmpty}},
		{"too long", strings.Repeat("a", httplimit.MaxIdentityLength+1), httplimit.IdentityError{Problem: httplimit.IdentityTooLong, Length: httplimit.MaxIdentityLength + 1}},
		{"far too long", strings.Repeat("a", 10000), httplimit.IdentityError{Problem: httplimit.IdentityTooLong, Length: 10000}},
		{"too long once folded", strings.Repeat("\u023A", 129), httplimit.IdentityError{Problem: httplimit.IdentityTooLong, Length: 3 * 129}},
		{"invalid utf-8", "al\xffice", httplimit.IdentityError{Problem: httplimit.IdentityInvalidUTF8, Offset: 2}},
		{"nul", "alice\x00", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 5}},
		{"interior line break", "alice\r\nbob", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 5}},
		{"C1 control", "a\u0085b", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 1}},
		{"zero-width space", "ali\u200bce", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 3}},
		{"zero-width joiner", "ali\u200dce", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 3}},
		{"bidi override", "\u202eecila", httplimit.IdentityError{Problem: httplimit.IdentityControl}},
		{"byte order mark", "\ufeffalice", httplimit.IdentityError{Problem: httplimit.IdentityControl}},
		{"soft hyphen", "al\u00adice", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 2}},
		// Default-ignorable characters outside Cf render as nothing too,
		// and NFKC_Casefold, with which many account stores match
		// identities, deletes them: counted apart, each would be a fresh
		// identity quota for the same account.
		{"combining grapheme joiner", "admin\u034f@example.com", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 5}},
		{"variation selector", "admin\ufe0f@example.com", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 5}},
		{"supplementary variation selector", "a\U000E0100dmin", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 1}},
		{"mongolian variation selector", "ad\u180bmin", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 2}},
		{"hangul filler", "admin\u3164", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 5}},
		{"halfwidth hangul filler", "\uffa0admin", httplimit.IdentityError{Problem: httplimit.IdentityControl}},
		{"khmer inherent vowel", "ad\u17b4min", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 2}},
		{"reserved default-ignorable", "admin\u2065", httplimit.IdentityError{Problem: httplimit.IdentityControl, Offset: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := httplimit.AppendIdentity([]byte("p:"), tc.in)
			require.Equal(t, "p:", string(got), "nothing appended")
			var ie *httplimit.IdentityError
			require.ErrorAs(t, err, &ie)
			require.Equal(t, tc.want, *ie)
			require.ErrorIs(t, err, httplimit.ErrInvalidIdentity)
			leakcheck.Check(t, "IdentityError", err, []byte(tc.in))
		})
	}
}

// The limit is on the normalized form: the longest one is accepted, even
// from a longer spelling.
func TestAppendIdentityLength(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"  " + strings.Repeat("A", httplimit.MaxIdentityLength) + "  ",
		strings.Repeat("\u212A", httplimit.MaxIdentityLength), // 3 bytes each, folds to "k"
	} {
		got, err := httplimit.AppendIdentity(nil, in)
		require.NoError(t, err)
		require.Len(t, got, httplimit.MaxIdentityLength)
	}
}

// Obfuscated spellings of one identity give one subject: what the
// identity limit must see to count a spray against one account.
func TestAppendIdentityObfuscation(t *testing.T) {
	t.Parallel()
	want, err := httplimit.AppendIdentity(nil, "admin@example.com")
	require.NoError(t, err)
	for _, spelling := range []string{
		"ADMIN@EXAMPLE.COM", "Admin@Example.Com", " admin@example.com", "admin@example.com\t",
		"\u00a0aDmIn@eXaMpLe.cOm\u2009",
	} {
		got, err := httplimit.AppendIdentity(nil, spelling)
		require.NoError(t, err, "%q", spelling)
		require.Equal(t, string(want), string(got), "%q", spelling)
	}
	// Spellings that would smuggle an invisible difference are refused
	// rather than counted as another identity.
	for _, spelling := range []string{"admin\u200b@example.com", "admin@example.com\x00", "\u2060admin@example.com", "admin\u034f@example.com", "admin@example.com\ufe0f"} {
		_, err := httplimit.AppendIdentity(nil, spelling)
		require.ErrorIs(t, err, httplimit.ErrInvalidIdentity, "%q", spelling)
	}
}

// Every rune of every fold orbit folds to one member of that orbit, but
// the Turkish İ and ı, which fold to i.
func TestFoldRuneOrbits(t *testing.T) {
	t.Parallel()
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		f := httplimit.FoldRune(r)
		require.True(t, strings.EqualFold(dotlessI.Replace(string(r)), string(f)), "%U folds to %U outside its orbit", r, f)
		require.Equal(t, f, httplimit.FoldRune(f), "%U: folding is not idempotent", r)
	}
}

// dotlessI replaces the Turkish İ and ı, which AppendIdentity counts as i.
var dotlessI = strings.NewReplacer("\u0130", "i", "\u0131", "i")

// FuzzAppendIdentity: two accepted identities give the same bytes exactly
// when strings.EqualFold reports them equal after trimming and replacing
// İ and ı by i; folding is idempotent; a refused identity appends nothing
// and is typed.
func FuzzAppendIdentity(f *testing.F) {
	for _, p := range [][2]string{
		{"Alice", "alice"}, {"\u212A", "k"}, {"\u017F", "S"}, {"\u03c2", "\u03a3"},
		{"\u0130", "i"}, {"\u0131", "I"}, {"\u0130", "\u0131"}, {" x ", "X"}, {"a\u200b", "a"}, {"\xff", "a"},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		na, errA := httplimit.AppendIdentity(nil, a)
		nb, errB := httplimit.AppendIdentity(nil, b)
		for _, e := range []struct {
			n   []byte
			err error
		}{{na, errA}, {nb, errB}} {
			if e.err != nil {
				require.ErrorIs(t, e.err, httplimit.ErrInvalidIdentity)
				require.Empty(t, e.n)
				continue
			}
			again, err := httplimit.AppendIdentity(nil, string(e.n))
			require.NoError(t, err)
			require.Equal(t, string(e.n), string(again), "not idempotent")
		}
		if errA != nil || errB != nil {
			return
		}
		equal := strings.EqualFold(dotlessI.Replace(strings.TrimSpace(a)), dotlessI.Replace(strings.TrimSpace(b)))
		require.Equal(t, equal, string(na) == string(nb), "%q %q", a, b)
	})
}

func TestIdentityErrorMessages(t *testing.T) {
	t.Parallel()
	for _, e := range []*httplimit.IdentityError{
		{Problem: httplimit.IdentityEmpty}, {Problem: httplimit.IdentityTooLong, Length: 300},
		{Problem: httplimit.IdentityInvalidUTF8, Offset: 3}, {Problem: httplimit.IdentityControl, Offset: 4},
	} {
		require.True(t, strings.HasPrefix(e.Error(), "httplimit: identity "), e.Error())
		require.True(t, errors.Is(e, httplimit.ErrInvalidIdentity))
	}
}
