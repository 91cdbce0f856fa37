//go:build !race

// The race detector makes sync.Pool drop items on purpose, so allocation
// counts are only meaningful without it.

package domain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Not parallel: testing.AllocsPerRun refuses to run in a parallel test.
func TestKeyHasherDoesNotAllocate(t *testing.T) {
	f := setup(t)

	short := "user@example.test"
	long := strings.Repeat("s", 2000)
	longBytes := []byte(long)
	cases := map[string]func(){
		"short string": func() { _ = f.hasher.KeyString(f.policy, short) },
		"long string":  func() { _ = f.hasher.KeyString(f.policy, long) },
		"long bytes":   func() { _ = f.hasher.Key(f.policy, longBytes) },
	}
	for name, derive := range cases {
		derive() // fill the scratch pool
		require.Zero(t, testing.AllocsPerRun(100, derive), name)
	}
}
