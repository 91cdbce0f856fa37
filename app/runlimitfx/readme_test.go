package runlimitfx_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/internal/readme"
)

// TestReadmeModuleExamplesAreTheCompiledExamples holds the README's fx
// examples, and the output they show, to ExampleModule and
// Example_customStore.
func TestReadmeModuleExamplesAreTheCompiledExamples(t *testing.T) {
	t.Parallel()
	goBlocks, err := readme.Blocks("../../README.md", "go")
	require.NoError(t, err)
	textBlocks, err := readme.Blocks("../../README.md", "text")
	require.NoError(t, err)
	for _, decl := range []string{"func ExampleModule() {", "func Example_customStore() {"} {
		body, err := readme.FuncBody("example_test.go", decl, "// Output:")
		require.NoError(t, err)
		require.Contains(t, trimAll(goBlocks), strings.TrimSpace(body),
			"the README must show the body of %s exactly; copy it over", decl)
		require.Contains(t, trimAll(textBlocks), exampleOutput(t, "example_test.go", decl),
			"the README must show the Output of %s", decl)
	}
}

// TestReadmeObserverLineCompiles holds the README's one-line observer
// registration to the one TestModuleCollectsObservers' sibling compiles.
func TestReadmeObserverLineCompiles(t *testing.T) {
	t.Parallel()
	goBlocks, err := readme.Blocks("../../README.md", "go")
	require.NoError(t, err)
	line, err := readme.FuncBody("readme_test.go", "func observerLine() fx.Option {", "")
	require.NoError(t, err)
	require.Contains(t, trimAll(goBlocks), strings.TrimPrefix(strings.TrimSpace(line), "return "))
	require.NoError(t, fx.ValidateApp(fx.NopLogger, runlimitfx.Module, fx.Supply(memoryConfig(t)), observerLine(), useEverything))
}

// observerLine is the README's observer registration, compiled.
func observerLine() fx.Option {
	return fx.Provide(fx.Annotate(newMetricsObserver, fx.ResultTags(`group:"runlimit.observers"`), fx.As(new(app.Observer))))
}

// metricsObserver stands for a host's metrics observer.
type metricsObserver struct{}

func (metricsObserver) ObserveAdmission(app.Event) {}

func newMetricsObserver() metricsObserver { return metricsObserver{} }

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
