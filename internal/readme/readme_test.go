package readme_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/readme"
)

// TestReadmeTelemetryLineIsTheExamples holds the README's one-line fx
// telemetry block to ExampleModule_openTelemetry, which compiles and runs
// it: the line must appear there verbatim.
func TestReadmeTelemetryLineIsTheExamples(t *testing.T) {
	t.Parallel()
	blocks, err := readme.Blocks("../../README.md", "go")
	require.NoError(t, err)
	var line string
	for _, b := range blocks {
		if b = strings.TrimSpace(b); strings.HasPrefix(b, "fx.Supply(fx.Annotate(meterProvider") {
			line = b
		}
	}
	require.NotEmpty(t, line, "the README's telemetry block is gone; drop this test or point it at the new one")
	body, err := readme.FuncBody("../../app/runlimitfx/example_telemetry_test.go", "func ExampleModule_openTelemetry() {", "// Output:")
	require.NoError(t, err)
	require.Contains(t, body, "\t"+line+",\n", "the README's telemetry line must be ExampleModule_openTelemetry's; copy it over")
}
