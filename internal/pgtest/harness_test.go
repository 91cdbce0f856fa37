package pgtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// closedURL points at a port nothing listens on, with a password that must
// never be printed.
const closedURL = "postgres://quotauser:hunter2-probe@127.0.0.1:1/postgres?connect_timeout=2"

// TestProbeWithoutAServerGivesOneLineOfAdvice cannot run in parallel: it
// sets the variable every test of the binary reads.
func TestProbeWithoutAServerGivesOneLineOfAdvice(t *testing.T) {
	t.Setenv(EnvURL, closedURL)
	_, err := Probe(context.Background())
	require.Error(t, err)
	msg := err.Error()
	require.NotContains(t, msg, "\n")
	require.Contains(t, msg, EnvURL+" is set but no PostgreSQL answers there")
	require.Contains(t, msg, "make test-short")
	require.NotContains(t, msg, "hunter2")
}

func TestProbeNamesTheServer(t *testing.T) {
	t.Parallel()
	skipShort(t)
	line, err := Probe(context.Background())
	require.NoError(t, err)
	srv, err := getServer()
	require.NoError(t, err)
	if srv.source != FromDocker {
		require.Equal(t, "pgtest: the PostgreSQL tests will use "+srv.describe(), line)
	}
}

// TestMainSaysOnceWhenThereIsNoServer runs some of this package's tests in
// a child go test whose server does not answer: the database tests do not
// each fail with the message; the package fails with one line of advice.
// Under -short the same run passes.
func TestMainSaysOnceWhenThereIsNoServer(t *testing.T) {
	t.Parallel()
	skipShort(t) // it builds and runs a test binary
	run := func(short bool) (string, error) {
		args := []string{"test", "-count=1", "-run", "^(TestDatabasesAreIsolated|TestNewPoolAppliesConfiguration|TestDatabaseURL)$", "."}
		if short {
			args = append(args, "-short")
		}
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), EnvURL+"="+closedURL)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	out, err := run(false)
	require.Error(t, err, out)
	require.Equal(t, 1, strings.Count(out, "pgtest: 2 test(s) need PostgreSQL and did not run"), out)
	require.Equal(t, 1, strings.Count(out, "make test-short"), "the advice is given once:\n%s", out)
	require.NotContains(t, out, "hunter2")
	require.NotContains(t, out, "--- FAIL", "no test fails on its own for want of a server")

	out, err = run(true)
	require.NoError(t, err, out)
}
