package runlimitfx_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/readme"
)

// TestReadmeModuleExampleIsTheCompiledExample holds the README's fx
// example, and the output it shows, to ExampleModule.
func TestReadmeModuleExampleIsTheCompiledExample(t *testing.T) {
	t.Parallel()

	body, err := readme.FuncBody("example_test.go", "func ExampleModule() {", "// Output:")
	require.NoError(t, err)
	goBlocks, err := readme.Blocks("../../README.md", "go")
	require.NoError(t, err)
	require.Contains(t, trimAll(goBlocks), strings.TrimSpace(body),
		"the README must show ExampleModule's body exactly; copy it over")

	textBlocks, err := readme.Blocks("../../README.md", "text")
	require.NoError(t, err)
	require.Contains(t, trimAll(textBlocks), exampleOutput(t, "example_test.go", "func ExampleModule() {"),
		"the README must show ExampleModule's Output")
}

func trimAll(blocks []string) []string {
	out := make([]string, len(blocks))
	for i, b := range blocks {
		out[i] = strings.TrimSpace(b)
	}
	return out
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
