package httplimit_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/readme"
)

// TestReadmeShowsExampleGuard holds the README's HTTP section to
// ExampleGuard, which go test compiles and runs: the Go block is the
// example's body from its policies on, the text block its output.
func TestReadmeShowsExampleGuard(t *testing.T) {
	t.Parallel()
	body, err := readme.FuncBody("example_test.go", "func ExampleGuard() {", "// Output:")
	require.NoError(t, err)
	from := strings.Index(body, "network := ")
	require.GreaterOrEqual(t, from, 0)
	goBlocks, err := readme.Blocks("../../README.md", "go")
	require.NoError(t, err)
	require.Contains(t, trimmed(goBlocks), strings.TrimSpace(body[from:]),
		"the README must show ExampleGuard from its policies on; copy it over")

	full, err := readme.FuncBody("example_test.go", "func ExampleGuard() {", "")
	require.NoError(t, err)
	out := full[strings.Index(full, "// Output:\n")+len("// Output:\n"):]
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(l, "// "), "//"))
	}
	textBlocks, err := readme.Blocks("../../README.md", "text")
	require.NoError(t, err)
	require.Contains(t, trimmed(textBlocks), strings.Join(lines, "\n"),
		"the README must show ExampleGuard's output")
}

func trimmed(blocks []string) []string {
	out := make([]string, len(blocks))
	for i, b := range blocks {
		out[i] = strings.TrimSpace(b)
	}
	return out
}
