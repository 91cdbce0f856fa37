package httplimit_test

import (
	"net/http"
	"strconv"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
)

// The Turkish and Azeri dotted capital İ (U+0130) lower-cases to "i", and
// the dotless ı (U+0131) upper-cases to "I": strings.ToLower and
// strings.ToUpper do it, and so do SQL's lower and upper (PostgreSQL's
// lower('admİn') is 'admin' under C.UTF-8), with which most account stores
// match identities. Neither is in the simple case folding orbit of i, so
// AppendIdentity counted "admİn@example.com" and "admın@example.com"
// apart from "admin@example.com" while such a store logged all three into
// one account: a fresh identity quota for every spelling of every i in the
// name, 2^k of them for k i's. Both now count as i.
func TestIdentityTurkishICountsAsI(t *testing.T) {
	t.Parallel()
	want, err := httplimit.AppendIdentity(nil, "admin@example.com")
	require.NoError(t, err)
	for _, spelling := range []string{
		"adm\u0130n@example.com", "adm\u0131n@example.com", "ADM\u0130N@EXAMPLE.COM", "ADM\u0131N@example.com", "AdMiN@example.com",
	} {
		got, err := httplimit.AppendIdentity(nil, spelling)
		require.NoError(t, err, "%q", spelling)
		require.Equal(t, string(want), string(got), "%q reaches the account of admin@example.com through lower() or upper()", spelling)
	}
}

// Every character an account store's lower-casing or upper-casing maps
// onto another (unicode.ToLower, ToUpper, ToTitle and their Turkish
// forms, which strings.ToLower, ToUpper and SQL's lower and upper apply
// per character) gives the same identity as that other character, so no
// spelling reaches an account through the store's case mapping while it
// is counted as another identity.
func TestIdentityCaseMappingsShareOneQuota(t *testing.T) {
	t.Parallel()
	norm := func(r rune) string {
		b, err := httplimit.AppendIdentity(nil, string(r))
		if err != nil {
			return ""
		}
		return string(b)
	}
	for r := rune(0x21); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		mappings := [...]rune{
			unicode.ToLower(r), unicode.ToUpper(r), unicode.ToTitle(r),
			unicode.TurkishCase.ToLower(r), unicode.TurkishCase.ToUpper(r),
		}
		n := ""
		for _, m := range mappings {
			if m == r {
				continue
			}
			if n == "" {
				if n = norm(r); n == "" {
					break
				}
			}
			require.Equal(t, n, norm(m), "%U and its case mapping %U are counted apart", r, m)
		}
	}
}

// End to end: an attacker trying one account from many networks, each
// attempt spelled with another form of i, gets the identity limit and no
// more.
func TestGuardIdentitySpellingsOfI(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := newLoginService(t, f, nil)
	var statuses []int
	for i, spelling := range []string{"admin@example.com", "adm\u0130n@example.com", "adm\u0131n@example.com", "ADM\u0130N@example.com"} {
		w := do(s.handler, loginRequest("192.0.2."+strconv.Itoa(i+1)+":1", spelling))
		statuses = append(statuses, w.Code)
	}
	// loginIdentity admits 2 a minute.
	require.Equal(t, []int{http.StatusNoContent, http.StatusNoContent, http.StatusTooManyRequests, http.StatusTooManyRequests}, statuses)
}
