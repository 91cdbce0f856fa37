package mapstore_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/readme"
)

// TestReadmesShowTheConformanceTest holds the conformance snippet in the
// project README and in this folder's README to TestConformance, which
// go test compiles and runs.
func TestReadmesShowTheConformanceTest(t *testing.T) {
	t.Parallel()

	fn, err := readme.Func("conformance_test.go", "func TestConformance(t *testing.T) {")
	require.NoError(t, err)
	for _, path := range []string{"../../README.md", "README.md"} {
		blocks, err := readme.Blocks(path, "go")
		require.NoError(t, err)
		found := false
		for _, b := range blocks {
			if strings.TrimSpace(b) == strings.TrimSpace(fn) {
				found = true
			}
		}
		require.True(t, found, "%s must show TestConformance exactly as conformance_test.go has it:\n%s", path, fn)
	}
}
