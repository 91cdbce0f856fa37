package app_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLinksOnlyTheStandardLibrary: the limiter service, and a program built
// from it and the memory store, depend on nothing outside the standard
// library but Runlimit's own packages, so a memory-only host pulls in no
// third-party module (fx, pgx and the rest live in app's sub-packages).
func TestLinksOnlyTheStandardLibrary(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{".", "../examples/memoryonly"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
		require.NoError(t, err, "go list -deps %s: %s", pkg, out)
		deps := strings.Fields(string(out))
		require.Contains(t, deps, "github.com/runlimit/runlimit/app", "%s must be built from app", pkg)
		for _, dep := range deps {
			require.True(t, strings.HasPrefix(dep, "github.com/runlimit/runlimit/"),
				"%s depends on %s, outside the standard library", pkg, dep)
			require.False(t, strings.HasPrefix(dep, "github.com/runlimit/runlimit/app/"),
				"%s depends on %s, which links fx or pgx", pkg, dep)
		}
		if pkg != "." {
			require.Contains(t, deps, "github.com/runlimit/runlimit/adapters/memory", "%s must use the memory store", pkg)
		}
	}
}

// TestServiceImportsOnlyDomainAndPorts: the limiter service depends on the
// domain and the port, never on an adapter, even one that links only the
// standard library: any store reaches it through ports.Store.
func TestServiceImportsOnlyDomainAndPorts(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	require.NoError(t, err, "go list -deps: %s", out)
	allowed := []string{
		"github.com/runlimit/runlimit/app",
		"github.com/runlimit/runlimit/domain",
		"github.com/runlimit/runlimit/ports",
		"github.com/runlimit/runlimit/internal/callerctx",
		"github.com/runlimit/runlimit/internal/nilcheck",
	}
	for _, dep := range strings.Fields(string(out)) {
		require.Contains(t, allowed, dep, "app depends on %s: the service may use only the domain and the port", dep)
	}
}
