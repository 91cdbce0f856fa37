package conformance_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsNoBackend: third parties compile the suite into their own
// tests, so it must not drag in Runlimit's stores, the app wiring or their
// drivers (STYLE: conformance never imports pgx or dockertest).
func TestImportsNoBackend(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err, "go list -deps")
	forbidden := []string{
		"github.com/jackc/",
		"github.com/ory/dockertest",
		"go.uber.org/",
		"github.com/runlimit/runlimit/adapters/",
		"github.com/runlimit/runlimit/app/", // the wiring and the fx module; app itself is the service
		"github.com/runlimit/runlimit/migrations",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			require.False(t, strings.HasPrefix(pkg, f), "conformance depends on %s", pkg)
		}
	}
}
