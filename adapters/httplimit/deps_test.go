package httplimit_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsOnlyDomainAndPorts: the middleware is a driving adapter that a
// host adds to any limiter, so it links the standard library and Runlimit's
// domain and ports only: no store, no wiring, and nothing of pgx, tern, fx
// or OpenTelemetry, as the README and the package documentation promise.
func TestImportsOnlyDomainAndPorts(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	require.NoError(t, err, "go list -deps: %s", out)
	allowed := []string{
		"github.com/runlimit/runlimit/adapters/httplimit",
		"github.com/runlimit/runlimit/domain",
		"github.com/runlimit/runlimit/ports",
		"github.com/runlimit/runlimit/internal/nilcheck",
	}
	for _, dep := range strings.Fields(string(out)) {
		require.Contains(t, allowed, dep, "httplimit depends on %s", dep)
	}
}
