package domain_test

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// Host structs that hold keys the ways applications do.
type (
	exportedFields struct {
		Key     domain.SubjectKey
		Counter domain.CounterKey
		Check   domain.Check
		Hasher  domain.KeyHasher
		Ptr     *domain.KeyHasher
	}
	unexportedFields struct {
		key     domain.SubjectKey
		counter domain.CounterKey
		check   domain.Check
		hasher  domain.KeyHasher
		keys    []domain.SubjectKey
		byKey   map[domain.CounterKey]int
	}
	embeddedKey struct {
		domain.SubjectKey
		Name string
	}
	embeddedHasher struct {
		domain.KeyHasher
	}
)

// renderings lists the ways fmt can spell bytes: raw, hex in both cases, Go
// syntax, decimal and quoted. Every 6-byte window is listed, so a partial
// print (a chunk, one half of a counter key) is caught too.
func renderings(b []byte) []string {
	const window = 6
	var out []string
	for i := 0; i+window <= len(b); i++ {
		w := b[i : i+window]
		var dec, goSyntax []string
		for _, c := range w {
			dec = append(dec, strconv.Itoa(int(c)))
			goSyntax = append(goSyntax, fmt.Sprintf("%#x", c))
		}
		quoted := strconv.Quote(string(w))
		out = append(out,
			string(w),
			hex.EncodeToString(w),
			strings.ToUpper(hex.EncodeToString(w)),
			strings.Join(dec, " "),
			strings.Join(goSyntax, ", "),
			quoted[1:len(quoted)-1],
		)
	}
	return out
}

func TestNothingPrintsKeysOrSecrets(t *testing.T) {
	t.Parallel()
	f := setup(t)

	key := f.key("user@example.test")
	counter := domain.NewCounterKey(f.policy.Fingerprint(), key)
	check := domain.NewCheck(f.policy, key)
	hasher := f.hasher
	batch := newBatch(t, check)

	values := map[string]any{
		"KeyHasher":         hasher,
		"*KeyHasher":        &hasher,
		"SubjectKey":        key,
		"*SubjectKey":       &key,
		"CounterKey":        counter,
		"*CounterKey":       &counter,
		"Check":             check,
		"*Check":            &check,
		"[]SubjectKey":      []domain.SubjectKey{key, key},
		"[]Check":           []domain.Check{check},
		"map key":           map[domain.CounterKey]string{counter: "v"},
		"exported fields":   exportedFields{key, counter, check, hasher, &hasher},
		"*exported fields":  &exportedFields{key, counter, check, hasher, &hasher},
		"unexported fields": unexportedFields{key, counter, check, hasher, []domain.SubjectKey{key}, map[domain.CounterKey]int{counter: 1}},
		"*unexported":       &unexportedFields{key, counter, check, hasher, []domain.SubjectKey{key}, map[domain.CounterKey]int{counter: 1}},
		"embedded key":      embeddedKey{key, "n"},
		"embedded hasher":   embeddedHasher{hasher},
		"*Batch":            batch,
		"Batch":             *batch,
	}

	keyBytes := key.Bytes()
	var forbidden []string
	forbidden = append(forbidden, renderings(keyBytes[:])...)
	forbidden = append(forbidden, renderings(testSecret)...)

	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d", "%T"} {
			out := fmt.Sprintf(verb, v)
			for _, bad := range forbidden {
				require.NotContains(t, out, bad, "%s printed with %s: %s", name, verb, out)
			}
		}
		for _, out := range []string{fmt.Sprint(v), fmt.Sprintln(v, v)} {
			for _, bad := range forbidden {
				require.NotContains(t, out, bad, "%s printed with Sprint: %s", name, out)
			}
		}
	}
}

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
