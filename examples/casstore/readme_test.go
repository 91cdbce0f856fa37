package casstore_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/readme"
)

// TestReadmeShowsTheConformanceTest holds the conformance snippet in this
// folder's README to TestConformance, which go test compiles and runs.
func TestReadmeShowsTheConformanceTest(t *testing.T) {
	t.Parallel()
	fn, err := readme.Func("conformance_test.go", "func TestConformance(t *testing.T) {")
	require.NoError(t, err)
	blocks, err := readme.Blocks("README.md", "go")
	require.NoError(t, err)
	found := false
	for _, b := range blocks {
		if strings.TrimSpace(b) == strings.TrimSpace(fn) {
			found = true
		}
	}
	require.True(t, found, "README.md must show TestConformance exactly as conformance_test.go has it:\n%s", fn)
}
