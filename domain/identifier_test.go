package domain_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// identifierConstructors runs every identifier table against both types,
// which must follow the same rules and name their own field.
var identifierConstructors = []struct {
	field string
	build func(string) (string, error)
}{
	{"policy id", func(s string) (string, error) { id, err := domain.NewPolicyID(s); return id.String(), err }},
	{"scope id", func(s string) (string, error) { id, err := domain.NewScopeID(s); return id.String(), err }},
}

func TestIdentifierAccepts(t *testing.T) {
	t.Parallel()

	cases := map[string]string{
		"single letter":     "a",
		"digits":            "0123456789",
		"dash":              "a-b",
		"dot":               "a.b",
		"underscore":        "a_b",
		"colon":             "a:b",
		"slash":             "a/b",
		"only punctuation":  "-._:/",
		"every letter":      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
		"exactly 128 bytes": strings.Repeat("x", domain.MaxIdentifierLength),
	}
	for _, ctor := range identifierConstructors {
		for name, s := range cases {
			t.Run(ctor.field+"/"+name, func(t *testing.T) {
				t.Parallel()
				got, err := ctor.build(s)
				require.NoError(t, err)
				require.Equal(t, s, got)
			})
		}
	}
}

func TestIdentifierRejects(t *testing.T) {
	t.Parallel()

	cases := []struct {
		name    string
		input   string
		problem domain.IdentifierProblem
		length  int
		offset  int
	}{
		{name: "empty", input: "", problem: domain.IdentifierEmpty},
		{name: "129 bytes", input: strings.Repeat("x", 129), problem: domain.IdentifierTooLong, length: 129},
		{name: "too long with invalid bytes reports length", input: strings.Repeat(" ", 200), problem: domain.IdentifierTooLong, length: 200},
		{name: "space", input: "auth login", problem: domain.IdentifierInvalidByte, length: 10, offset: 4},
		{name: "NUL", input: "auth\x00", problem: domain.IdentifierInvalidByte, length: 5, offset: 4},
		{name: "leading invalid byte", input: "*auth", problem: domain.IdentifierInvalidByte, length: 5, offset: 0},
		{name: "first of several invalid bytes", input: "ab#c d", problem: domain.IdentifierInvalidByte, length: 6, offset: 2},
		{name: "non-ASCII UTF-8 names its first byte", input: "caf\u00e9", problem: domain.IdentifierInvalidByte, length: 5, offset: 3},
		{name: "DEL", input: "a\x7f", problem: domain.IdentifierInvalidByte, length: 2, offset: 1},
		{name: "plus", input: "a+b", problem: domain.IdentifierInvalidByte, length: 3, offset: 1},
		{name: "at sign", input: "user@host", problem: domain.IdentifierInvalidByte, length: 9, offset: 4},
		{name: "backslash", input: `a\b`, problem: domain.IdentifierInvalidByte, length: 3, offset: 1},
		{name: "last of 128 bytes", input: strings.Repeat("x", 127) + "!", problem: domain.IdentifierInvalidByte, length: 128, offset: 127},
	}
	for _, ctor := range identifierConstructors {
		for _, tc := range cases {
			t.Run(ctor.field+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				got, err := ctor.build(tc.input)
				require.Empty(t, got)
				require.ErrorIs(t, err, domain.ErrInvalidIdentifier)
				require.ErrorIs(t, err, domain.ErrInvalidInput)
				require.NotErrorIs(t, err, domain.ErrInvalidPolicy)

				var ie *domain.IdentifierError
				require.ErrorAs(t, err, &ie)
				require.Equal(t, ctor.field, ie.Field)
				require.Equal(t, tc.problem, ie.Problem)
				require.Equal(t, tc.length, ie.Length)
				require.Equal(t, tc.offset, ie.Offset)
				require.Contains(t, err.Error(), ctor.field)
			})
		}
	}
}

func TestIdentifierErrorText(t *testing.T) {
	t.Parallel()

	cases := []struct {
		name  string
		input string
		want  string
	}{
		{"empty", "", "runlimit: invalid policy id: empty"},
		{"too long", strings.Repeat("q", 129), "runlimit: invalid policy id: 129 bytes long, at most 128 allowed"},
		{"invalid byte", "secret-subject value", "runlimit: invalid policy id: byte offset 14 is not an ASCII letter, digit or one of - . _ : /"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := domain.NewPolicyID(tc.input)
			require.EqualError(t, err, tc.want)
		})
	}

	t.Run("never quotes the identifier", func(t *testing.T) {
		t.Parallel()
		input := "user@example.test"
		_, err := domain.NewScopeID(input)
		require.Error(t, err)
		for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			require.NotContains(t, text, "example")
			require.NotContains(t, text, "user@")
		}
	})
}

func TestIdentifierCaseSensitive(t *testing.T) {
	t.Parallel()
	f := setup(t)

	lower := newPolicy(t, "auth.login", "identity", 5, time.Second)
	upper := newPolicy(t, "Auth.Login", "identity", 5, time.Second)
	upperScope := newPolicy(t, "auth.login", "Identity", 5, time.Second)

	require.NotEqual(t, lower.ID(), upper.ID())
	require.NotEqual(t, lower.Fingerprint(), upper.Fingerprint())
	require.NotEqual(t, lower.Fingerprint(), upperScope.Fingerprint())
	require.NotEqual(t, f.hasher.KeyString(lower, "s").Bytes(), f.hasher.KeyString(upper, "s").Bytes())
	require.NotEqual(t, f.hasher.KeyString(lower, "s").Bytes(), f.hasher.KeyString(upperScope, "s").Bytes())
}

// FuzzIdentifier checks validation against a direct reading of the rule:
// 1 to 128 bytes, each an ASCII letter, digit or one of "-._:/".
func FuzzIdentifier(f *testing.F) {
	for _, seed := range []string{
		"", "a", "auth.login", "-._:/", "a b", "\x00", "caf\u00e9", "\xff",
		strings.Repeat("z", 128), strings.Repeat("z", 129), strings.Repeat("z", 127) + "\x80",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		firstBad := -1
		for i := 0; i < len(s); i++ {
			if !allowedIdentifierByte(s[i]) {
				firstBad = i
				break
			}
		}
		valid := len(s) >= 1 && len(s) <= domain.MaxIdentifierLength && firstBad < 0

		id, err := domain.NewPolicyID(s)
		if valid {
			require.NoError(t, err)
			require.Equal(t, s, id.String())
			return
		}
		var ie *domain.IdentifierError
		require.ErrorAs(t, err, &ie)
		require.True(t, errors.Is(err, domain.ErrInvalidInput))
		switch {
		case s == "":
			require.Equal(t, domain.IdentifierEmpty, ie.Problem)
		case len(s) > domain.MaxIdentifierLength:
			require.Equal(t, domain.IdentifierTooLong, ie.Problem)
			require.Equal(t, len(s), ie.Length)
		default:
			require.Equal(t, domain.IdentifierInvalidByte, ie.Problem)
			require.Equal(t, firstBad, ie.Offset)
			require.False(t, allowedIdentifierByte(s[ie.Offset]))
		}
	})
}

// allowedIdentifierByte restates the identifier alphabet independently of
// the implementation.
func allowedIdentifierByte(c byte) bool {
	return strings.IndexByte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:/", c) >= 0
}
