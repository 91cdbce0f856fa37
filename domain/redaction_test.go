package domain_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

func TestRedactedText(t *testing.T) {
	t.Parallel()
	f := setup(t)

	key := f.key("user@example.test")
	counter := domain.NewCounterKey(f.policy.Fingerprint(), key)
	check, err := domain.NewCheckCost(f.policy, key, 2)
	require.NoError(t, err)

	cases := []struct {
		name string
		v    any
		want string
	}{
		{"KeyHasher", f.hasher, "KeyHasher[redacted]"},
		{"*KeyHasher", &f.hasher, "KeyHasher[redacted]"},
		{"zero KeyHasher", domain.KeyHasher{}, "KeyHasher[redacted]"},
		{"SubjectKey", key, "SubjectKey[redacted]"},
		{"CounterKey", counter, "CounterKey[redacted]"},
		{"Check", check, "Check{policy: auth.login, scope: identity, cost: 2, key: [redacted]}"},
	}
	for _, tc := range cases {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q", "%d", "%10.3v"} {
			require.Equal(t, tc.want, fmt.Sprintf(verb, tc.v), "%s with %s", tc.name, verb)
		}
	}
	require.Equal(t, "SubjectKey[redacted]", key.String())
	require.Equal(t, "SubjectKey[redacted]", key.GoString())
	require.Equal(t, "CounterKey[redacted]", counter.String())
	require.Equal(t, "CounterKey[redacted]", counter.GoString())
	require.Equal(t, "KeyHasher[redacted]", f.hasher.String())
	require.Equal(t, "KeyHasher[redacted]", f.hasher.GoString())
	require.Equal(t, check.String(), check.GoString())
}

func TestFingerprintPrintsAsHex(t *testing.T) {
	t.Parallel()
	// A fingerprint is public configuration and is meant to be logged.
	p := newPolicy(t, "auth.login", "identity", 8, 60e9)
	require.Equal(t, "916a0fdb38078d25854fd8f591d0b5c619abd4fd93d327efbf7f0ce4d45bfe51", fmt.Sprint(p.Fingerprint()))
}
