package login_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/examples/loginservice/login"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

func normalized(t *testing.T, identity string) []byte {
	t.Helper()
	id, err := httplimit.AppendIdentity(nil, identity)
	require.NoError(t, err)
	return id
}

// TestUsersVerify: the right password of a known identity, however it is
// spelled, and nothing else.
func TestUsersVerify(t *testing.T) {
	t.Parallel()
	u := login.DemoUsers()
	require.Equal(t, 2, u.Len())
	require.True(t, u.Verify(normalized(t, login.DemoIdentity), login.DemoPassword))
	require.True(t, u.Verify(normalized(t, " ALICE@example.COM "), login.DemoPassword))
	require.True(t, u.Verify(normalized(t, login.OtherDemoIdentity), login.OtherDemoPassword))
	require.False(t, u.Verify(normalized(t, login.DemoIdentity), login.OtherDemoPassword), "another account's password")
	require.False(t, u.Verify(normalized(t, login.DemoIdentity), login.DemoPassword+" "))
	require.False(t, u.Verify(normalized(t, login.DemoIdentity), ""))
	require.False(t, u.Verify(normalized(t, "carol@example.com"), login.DemoPassword), "an unknown identity")
	require.False(t, u.Verify(nil, ""), "no identity, no password")
}

// TestNewUsersRefuses: identities that cannot be normalized, two that
// normalize alike, and an empty password.
func TestNewUsersRefuses(t *testing.T) {
	t.Parallel()
	_, err := login.NewUsers(map[string]string{"alice@example.com": "a", "Alice@Example.com": "b"})
	require.ErrorIs(t, err, login.ErrDuplicateUser)
	_, err = login.NewUsers(map[string]string{"  ": "a"})
	require.ErrorIs(t, err, httplimit.ErrInvalidIdentity)
	_, err = login.NewUsers(map[string]string{"carol@example.com": ""})
	require.Error(t, err)
	u, err := login.NewUsers(nil)
	require.NoError(t, err)
	require.Zero(t, u.Len())
}

// TestNothingPrintsSecrets: the account table and the service's config,
// printed by every printer alone and inside host structs, show no
// identity, no password, no key secret and no database password.
//
// leakcheck looks for every 6-byte window of each secret; the demo
// identities share "exampl" with the file paths testify prints, so the
// table checked for identities has identities of its own.
func TestNothingPrintsSecrets(t *testing.T) {
	t.Parallel()
	users, err := login.NewUsers(map[string]string{"Zed.Quux@mail.invalid": "pw-9f3e2d7c1b"})
	require.NoError(t, err)
	secrets := [][]byte{
		[]byte("Zed.Quux@mail.invalid"), normalized(t, "Zed.Quux@mail.invalid"), []byte("pw-9f3e2d7c1b"),
		[]byte(login.DemoPassword), []byte(login.OtherDemoPassword),
		[]byte(testSecret), []byte("db-password-8c1f"),
	}
	leakcheck.Check(t, "login.Users", users, secrets...)
	leakcheck.Check(t, "login.DemoUsers", login.DemoUsers(), secrets...)
	cfg := login.Config{
		Runtime: wiring.Config{
			DatabaseURL: wiring.NewSecret("postgres://app:db-password-8c1f@db.internal/app"),
			Gate:        &memory.Config{MaxKeys: 10},
			KeySecret:   wiring.NewSecret(testSecret),
		},
		Users: users,
	}
	leakcheck.Check(t, "login.Config", cfg, secrets...)
}
