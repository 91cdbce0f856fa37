package login_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/examples/loginservice/login"
)

// TestIdentitySpellingsShareTheAccountsQuota: the account a spelling of
// an identity reaches is the account whose quota it spends. Spellings the
// service counts apart from alice@example.com never log into her account,
// even with her password, so they cannot be used to guess it; spellings
// that log into it are counted against her one identity quota, from any
// network. The Turkish İ and ı are such spellings: a store that matches
// lower- or upper-cased identities (SQL's lower and upper, Go's
// strings.ToLower and ToUpper) reaches "alice" from "alİce" and "alıce".
func TestIdentitySpellingsShareTheAccountsQuota(t *testing.T) {
	t.Parallel()
	s := start(t, backends()[0])
	for i, other := range []string{
		"\uff41\uff4c\uff49\uff43\uff45@example.com", // fullwidth
		"a\u0301lice@example.com",                    // a combining accent
		"alice@example.com.",                         // a trailing dot
		"alice+x@example.com",                        // a sub-address
		"al ice@example.com",                         // interior space
	} {
		got := s.login(fmt.Sprintf("127.0.1.%d", i+1), other, login.DemoPassword)
		require.Equal(t, 401, got.status, "%+q is counted apart, so it must not reach alice's account", other)
	}
	reach := []string{"al\u0130ce@example.com", "AL\u0131CE@EXAMPLE.COM", " Alice@Example.com\u00a0"}
	require.Len(t, reach, int(testLimits.Identity))
	for i, spelling := range reach {
		got := s.login(fmt.Sprintf("127.0.2.%d", i+1), spelling, "wrong-guess")
		require.Equal(t, 401, got.status, "%+q", spelling)
	}
	got := s.login("127.0.3.1", login.DemoIdentity, login.DemoPassword)
	require.Equal(t, 429, got.status, "every spelling that reaches alice's account spent her quota")

	s.clock.Advance(time.Minute)
	for i, spelling := range reach {
		got := s.login(fmt.Sprintf("127.0.4.%d", i+1), spelling, login.DemoPassword)
		require.Equal(t, 200, got.status, "%+q reaches alice's account", spelling)
	}
}
