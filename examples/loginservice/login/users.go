package login

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"

	"github.com/runlimit/runlimit/adapters/httplimit"
)

// Users is the service's account table, in memory: a demo. It keeps no
// identity and no password, only digests, so printing it, as a crash dump
// or a debugger might, shows neither.
//
// A real service keeps accounts in a database and each password as a slow,
// salted hash (argon2id, scrypt or bcrypt), which a plain SHA-256 is not.
// What carries over is the shape of the check: the identity is normalized
// as the rate limiter normalizes it, an unknown identity costs the same
// comparison as a known one, and the comparison takes constant time.
type Users struct {
	// accounts maps an identity's digest, as a string, to its password's
	// digest. A string key rather than an array: testify's diffs sort map
	// keys and panic on an array in an unexported field.
	accounts map[string]digest
}

type digest [sha256.Size]byte

// ErrDuplicateUser: two identities given to [NewUsers] normalize to the
// same bytes, so one account would shadow the other.
var ErrDuplicateUser = errors.New("login: two users have the same normalized identity")

// NewUsers returns a table of the given accounts, identity to password.
// Identities are normalized with [httplimit.AppendIdentity], so that the
// account a login reaches is the one whose quota it spent.
func NewUsers(accounts map[string]string) (*Users, error) {
	u := &Users{accounts: make(map[string]digest, len(accounts))}
	for identity, password := range accounts {
		id, err := httplimit.AppendIdentity(nil, identity)
		if err != nil {
			return nil, fmt.Errorf("login: user identity: %w", err)
		}
		if password == "" {
			return nil, errors.New("login: a user has an empty password")
		}
		key := identityDigest(id)
		if _, dup := u.accounts[key]; dup {
			return nil, ErrDuplicateUser
		}
		u.accounts[key] = passwordDigest(id, password)
	}
	return u, nil
}

// Demo accounts of [DemoUsers]. They are published in the README: never
// deploy them.
const (
	DemoIdentity      = "alice@example.com"
	DemoPassword      = "wonderland-7"
	OtherDemoIdentity = "bob@example.com"
	OtherDemoPassword = "builder-42"
)

// DemoUsers returns the two demo accounts: DemoIdentity with DemoPassword
// and OtherDemoIdentity with OtherDemoPassword.
func DemoUsers() *Users {
	u, err := NewUsers(map[string]string{DemoIdentity: DemoPassword, OtherDemoIdentity: OtherDemoPassword})
	if err != nil {
		panic(err) // constants
	}
	return u
}

// Len returns the number of accounts.
func (u *Users) Len() int { return len(u.accounts) }

// Verify reports whether password is the password of the account whose
// normalized identity is id. An unknown identity is compared against a
// digest no password has, so that it takes as long as a wrong password.
func (u *Users) Verify(id []byte, password string) bool {
	want, known := u.accounts[identityDigest(id)]
	got := passwordDigest(id, password)
	// Both digests are always compared; known decides only at the end.
	match := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	return match && known
}

func identityDigest(id []byte) string {
	h := sha256.New()
	h.Write([]byte("loginservice/identity/v1\x00"))
	h.Write(id)
	return string(h.Sum(nil))
}

// passwordDigest binds the password to its identity, so that two accounts
// with one password have different digests.
func passwordDigest(id []byte, password string) digest {
	h := sha256.New()
	h.Write([]byte("loginservice/password/v1\x00"))
	h.Write(id)
	h.Write([]byte{0})
	h.Write([]byte(password))
	return digest(h.Sum(nil))
}
