package app_test

import (
	"os"
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
	require.GreaterOrEqual(t, len(goBlocks), 2, "the README has no Go example")
	// The first block is the imports a newcomer pastes with the example.
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	_, imports, _ := strings.Cut(string(src), "\nimport (")
	imports, _, _ = strings.Cut(imports, "\n)\n")
	require.Equal(t, "import ("+imports+"\n)", strings.TrimSpace(goBlocks[0]),
		"the README's first Go block must be example_test.go's imports; copy them over")
	body, err := readme.FuncBody("example_test.go", "func Example() {", "// Output:")
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(body), strings.TrimSpace(goBlocks[1]),
		"the README's second Go block must be Example's body; copy it over")

	textBlocks, err := readme.Blocks("../README.md", "text")
	require.NoError(t, err)
	require.NotEmpty(t, textBlocks, "the README shows no output")
	require.Equal(t, exampleOutput(t, "example_test.go", "func Example() {"), strings.TrimSpace(textBlocks[0]),
		"the README's output block must be Example's Output")
}

// exampleOutput returns the output the Example declared by decl in file
// promises, as it prints.
func exampleOutput(t *testing.T, file, decl string) string {
	t.Helper()
	full, err := readme.FuncBody(file, decl, "")
	require.NoError(t, err)
	_, output, found := strings.Cut(full, "// Output:\n")
	require.True(t, found, "%s has no // Output:", decl)
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(output), "\n") {
		lines = append(lines, strings.TrimPrefix(line, "// "))
	}
	return strings.Join(lines, "\n")
}
