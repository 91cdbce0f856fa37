package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
)

func TestDemoScenarioDecisions(t *testing.T) {
	t.Parallel()

	clock := memory.NewManualClock()
	store, err := memory.New(memory.Config{MaxKeys: 1_000, Shards: 4, Clock: clock})
	require.NoError(t, err)
	rows, err := playDemo(context.Background(), store, demoPolicyID, demoScenario(), clock.Advance)
	require.NoError(t, err)
	require.Len(t, rows, 45)

	for _, r := range rows[:8] {
		require.Equal(t, domain.Allowed, r.outcome, "attempt %d is within both limits", r.attempt)
	}
	require.Equal(t, "32", rows[7].clientLeft, "eight allowed attempts leave 32 of the client's 40")
	require.Equal(t, "0", rows[7].identityLeft)
	for _, r := range rows[8:10] {
		require.Equal(t, domain.Denied, r.outcome, "attempt %d exceeds the identity limit", r.attempt)
		require.Equal(t, "identity", r.deniedCheck)
		// The window was anchored at +0s and attempts come one a second.
		require.Equal(t, strconv.Itoa(60-(r.attempt-1)), r.retrySeconds)
	}
	// Denied attempts consumed nothing, so the client still has 32 left.
	for i, r := range rows[10:42] {
		require.Equal(t, domain.Allowed, r.outcome, "attempt %d sprays a fresh identity", r.attempt)
		require.Equal(t, strconv.Itoa(31-i), r.clientLeft)
	}
	for _, r := range rows[42:44] {
		require.Equal(t, domain.Denied, r.outcome, "attempt %d exceeds the client limit", r.attempt)
		require.Equal(t, "client", r.deniedCheck)
		require.Equal(t, strconv.Itoa(60-(r.attempt-1)), r.retrySeconds)
	}
	last := rows[44]
	require.Equal(t, 61*time.Second, last.at)
	require.Equal(t, domain.Allowed, last.outcome, "a minute later both windows have ended")
	require.Equal(t, "39", last.clientLeft)
	require.Equal(t, "7", last.identityLeft)
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{name: "demo prints the table", args: []string{"demo"}, code: 0, stdout: "DENIED BY"},
		{name: "help", args: []string{"help"}, code: 0, stdout: "Commands:"},
		{name: "no command", args: nil, code: 2, stderr: "Usage:"},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`},
		{name: "unknown flag", args: []string{"demo", "--bogus"}, code: 2, stderr: "flag provided but not defined"},
		{name: "stray argument", args: []string{"demo", "extra"}, code: 2, stderr: `unexpected argument "extra"`},
		{name: "command help", args: []string{"demo", "--help"}, code: 0, stderr: "Usage: runlimit demo"},
		{name: "migrate help", args: []string{"migrate", "--help"}, code: 0, stderr: "Usage: runlimit migrate"},
		{name: "cleanup help", args: []string{"cleanup", "-h"}, code: 0, stderr: "Usage: runlimit cleanup"},
		{name: "status help", args: []string{"status", "--help"}, code: 0, stderr: "Usage: runlimit status"},
		{name: "help lists migrate", args: []string{"help"}, code: 0, stdout: "migrate"},
		{name: "help lists cleanup", args: []string{"help"}, code: 0, stdout: "cleanup"},
		{name: "help lists status", args: []string{"help"}, code: 0, stdout: "status"},
		{name: "migrate unknown flag", args: []string{"migrate", "--bogus"}, code: 2, stderr: "flag provided but not defined: -bogus"},
		{name: "cleanup unknown flag", args: []string{"cleanup", "--bogus"}, code: 2, stderr: "flag provided but not defined: -bogus"},
		{name: "status unknown flag", args: []string{"status", "--bogus"}, code: 2, stderr: "flag provided but not defined: -bogus"},
		{name: "status stray argument", args: []string{"status", "extra"}, code: 2, stderr: `unexpected argument "extra"`},
		{name: "help for a command", args: []string{"help", "migrate"}, code: 0, stderr: "Usage: runlimit migrate"},
		{name: "help for two commands", args: []string{"help", "migrate", "status"}, code: 2, stderr: "want nothing or one command name"},
		{name: "help for no command", args: []string{"help", "postgres://u:hunter2@h/db"}, code: 2, stderr: "want nothing or one command name"},
		{name: "version takes no arguments", args: []string{"version", "--short"}, code: 2, stderr: "runlimit version: takes no arguments"},
		// Every command the usage lists answers --help and help <command>.
		{name: "version help", args: []string{"version", "--help"}, code: 0, stderr: "Usage: runlimit version"},
		{name: "version -h", args: []string{"version", "-h"}, code: 0, stderr: "Usage: runlimit version"},
		{name: "help for version", args: []string{"help", "version"}, code: 0, stderr: "Usage: runlimit version"},
		{name: "help for help", args: []string{"help", "help"}, code: 0, stdout: "Commands:"},
		{name: "help --help", args: []string{"--help", "-h"}, code: 0, stdout: "Commands:"},
		{name: "help for version and more", args: []string{"help", "version", "extra"}, code: 2, stderr: "want nothing or one command name"},
		{name: "version help is an argument", args: []string{"version", "help"}, code: 2, stderr: "runlimit version: takes no arguments"},
		// Flags that would be ignored are refused instead.
		{name: "print-sql with a database", args: []string{"migrate", "--print-sql", "--database-url", "postgres://u:hunter2@127.0.0.1:1/x"}, code: 2, stderr: "--print-sql connects to no database"},
		{name: "memory demo with a schema", args: []string{"demo", "--schema", "limits"}, code: 2, stderr: "--schema needs --database-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, noEnv, &stdout, &stderr)
			require.Equal(t, tt.code, code, "stderr: %s", stderr.String())
			require.Contains(t, stdout.String(), tt.stdout)
			require.Contains(t, stderr.String(), tt.stderr)
		})
	}
}

func TestMemoryDemoOutputIsPinned(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("testdata/demo_memory.txt")
	require.NoError(t, err)
	// The environment's database URL never turns the demo into a PostgreSQL
	// one.
	r := execute(t, envOf(map[string]string{envDatabaseURL: "postgres://127.0.0.1:1/x"}), "demo")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Equal(t, string(want), r.stdout)
}

func TestPostgresDemo(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	// Twice on one database: each run's policy ids are its own, so the
	// second run starts from full quotas too.
	for range 2 {
		r := execute(t, noEnv, "demo", "--database-url", db.URL)
		require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
		require.Empty(t, r.stderr)
		require.Contains(t, r.stdout, "Login admission on PostgreSQL")
		require.NotContains(t, r.stdout, "TIME", "no simulated time on PostgreSQL")
		require.NotContains(t, r.stdout, "gets in again", "the legend lists only the phases played")

		rows := demoTableRows(t, r.stdout)
		require.Len(t, rows, 44)
		for i, row := range rows {
			want := "allowed"
			switch {
			case i == 8 || i == 9:
				want = "denied identity"
			case i >= 42:
				want = "denied client"
			}
			require.Equal(t, want, strings.Join(row[2:], " "), "attempt %d", i+1)
		}
	}
}

// demoTableRows returns the attempt rows of a PostgreSQL demo's table:
// attempt, identity, outcome, and for a denial the check and retry-after
// seconds (checked to be 1 to 60), for an allowance nothing more. The
// phase column is checked against the attempt's place in the scenario and
// left out.
func demoTableRows(t *testing.T, out string) [][]string {
	t.Helper()
	var rows [][]string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 9 || f[0] == "ATTEMPT" {
			continue
		}
		wantPhase := "retry burst"
		if len(rows) >= 10 {
			wantPhase = "identity spray"
		}
		require.Equal(t, wantPhase, f[1]+" "+f[2], line)
		f = append(f[:1], f[3:]...)
		if f[2] == "denied" {
			retry, err := strconv.Atoi(f[4])
			require.NoError(t, err)
			require.True(t, retry >= 1 && retry <= 60, "retry-after %d within the minute", retry)
			rows = append(rows, f[:4])
			continue
		}
		require.Equal(t, []string{"allowed", "-", "-"}, f[2:5], line)
		rows = append(rows, f[:3])
	}
	return rows
}

func TestPostgresDemoWithoutTheSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	r := execute(t, noEnv, "demo", "--database-url", db.URL)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `run "runlimit migrate" first`)
	require.Empty(t, r.stdout)
}
