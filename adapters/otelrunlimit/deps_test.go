package otelrunlimit_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// deps lists the packages pkg links, outside the standard library.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s: %s", pkg, out)
	return strings.Fields(string(out))
}

// TestOnlyThisPackageLinksOpenTelemetry: the limiter service, the memory
// store, a memory-only program and the wiring link nothing of
// OpenTelemetry, so a host that does not import this package pays for
// none of it; this package and the fx module link the API only, never
// the SDK, which is the host's choice.
func TestOnlyThisPackageLinksOpenTelemetry(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"../../app", "../memory", "../../examples/memoryonly", "../../app/wiring"} {
		for _, dep := range deps(t, pkg) {
			require.False(t, strings.HasPrefix(dep, "go.opentelemetry.io/"), "%s links %s", pkg, dep)
			require.NotEqual(t, "github.com/runlimit/runlimit/adapters/otelrunlimit", dep, "%s links the adapter", pkg)
		}
	}
	for _, pkg := range []string{".", "../../app/runlimitfx"} {
		all := deps(t, pkg)
		require.Contains(t, all, "go.opentelemetry.io/otel/metric", pkg)
		require.Contains(t, all, "go.opentelemetry.io/otel/trace", pkg)
		for _, dep := range all {
			require.False(t, strings.HasPrefix(dep, "go.opentelemetry.io/otel/sdk"), "%s links the SDK: %s", pkg, dep)
		}
	}
}

// TestLinksNoStoreDriverOrFramework: a host that adds OpenTelemetry to a
// memory-only limiter links the OpenTelemetry API and nothing of the
// PostgreSQL store, its migrations, the wiring or fx: headroom comes
// through a Stats function, whatever the store.
func TestLinksNoStoreDriverOrFramework(t *testing.T) {
	t.Parallel()
	forbidden := []string{
		"github.com/jackc/",
		"go.uber.org/",
		"github.com/runlimit/runlimit/adapters/postgres",
		"github.com/runlimit/runlimit/adapters/memory",
		"github.com/runlimit/runlimit/migrations",
		"github.com/runlimit/runlimit/app/",
	}
	for _, dep := range deps(t, ".") {
		for _, f := range forbidden {
			require.False(t, strings.HasPrefix(dep, f), "otelrunlimit links %s", dep)
		}
	}
}
