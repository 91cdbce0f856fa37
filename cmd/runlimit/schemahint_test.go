package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
)

// The postgres store's errors say how to apply a missing schema in Go
// (migrations.MigratePool, wiring's Config.Migrate); a command's user gets
// the command's advice instead, once, not both.
func TestCommandsGiveOneSchemaHint(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	for _, args := range [][]string{
		{"status", "--database-url", db.URL},
		{"cleanup", "--database-url", db.URL},
	} {
		r := execute(t, noEnv, args...)
		require.Equal(t, 1, r.code, "%s: stderr: %s", args[0], r.stderr)
		require.Contains(t, r.stderr, `run "runlimit migrate" first, or check --schema`, args[0])
		require.Equal(t, 1, strings.Count(r.stderr, "schema is missing"), "%s: %s", args[0], r.stderr)
		require.NotContains(t, r.stderr, "MigratePool", args[0])
	}
}
