package app_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/readme"
)

// TestReadmeExampleIsTheCompiledExample holds the README's example, and the
// output it shows, to Example in example_test.go, which go test compiles
// and runs.
func TestReadmeExampleIsTheCompiledExample(t *testing.T) {
	t.Parallel()

	goBlocks, err := readme.Blocks("../README.md", "go")
	require.NoError(t, err)
	require.NotEmpty(t, goBlocks, "the README has no Go example")
	body, err := readme.FuncBody("example_test.go", "func Example() {", "// Output:")
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(body), strings.TrimSpace(goBlocks[0]),
		"the README's first Go block must be Example's body; copy it over")

	textBlocks, err := readme.Blocks("../README.md", "text")
	require.NoError(t, err)
	require.NotEmpty(t, textBlocks, "the README shows no output")
	full, err := readme.FuncBody("example_test.go", "func Example() {", "")
	require.NoError(t, err)
	_, output, found := strings.Cut(full, "// Output:\n")
	require.True(t, found)
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(output), "\n") {
		want = append(want, strings.TrimPrefix(line, "// "))
	}
	require.Equal(t, strings.Join(want, "\n"), strings.TrimSpace(textBlocks[0]),
		"the README's output block must be Example's Output")
}
