package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
)

// TestStatusReadsTheServicesRowsPerShard: status read the service's schema
// from $RUNLIMIT_POSTGRES_SCHEMA but measured headroom against the
// default 4,096 rows per shard whatever $RUNLIMIT_POSTGRES_ROWS_PER_SHARD
// said, so run in the service's environment (a monitoring job sharing
// it) it overstated the headroom of a service configured with fewer: a
// shard that already denied every new key showed thousands of free rows.
// It now reads the variable when --rows-per-shard is absent; the flag
// still wins, and an unusable value is a usage error naming the variable.
func TestStatusReadsTheServicesRowsPerShard(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	addCounters(t, db.Pool, "status", 40)
	env := envOf(map[string]string{envRowsPerShard: "100"})

	r := execute(t, env, "status", "--database-url", db.URL, "--json")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	var report statusReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.Equal(t, 100, report.RowsPerShard, "the service's rows per shard")
	require.EqualValues(t, 256*100, report.Capacity)
	require.EqualValues(t, 100-report.FullestShards[0].Rows, report.FullestShards[0].Headroom)

	r = execute(t, env, "status", "--database-url", db.URL, "--json", "--rows-per-shard", "200")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.Equal(t, 200, report.RowsPerShard, "the flag wins")

	r = execute(t, envOf(map[string]string{envRowsPerShard: "0"}), "status", "--database-url", db.URL, "--json")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.Equal(t, 4096, report.RowsPerShard, "0 is the service's default, as postgres.Config reads it")

	for _, bad := range []string{"-1", "65537", "1e3", " 100", "lots"} {
		r = execute(t, envOf(map[string]string{envRowsPerShard: bad}), "status", "--database-url", db.URL)
		require.Equal(t, 2, r.code, "%q: %s", bad, r.stderr)
		require.Contains(t, r.stderr, "$"+envRowsPerShard, bad)
	}
}
