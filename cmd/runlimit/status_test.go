package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/internal/pgtest"
)

func TestStatusReportsTheStore(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	addCounters(t, db.Pool, "status", 40)
	store, err := postgres.New(db.Pool, postgres.Config{RowsPerShard: 100})
	require.NoError(t, err)
	want, err := store.TableStats(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 40, want.Rows)
	latest, _, err := latestSchema("public")
	require.NoError(t, err)

	r := execute(t, noEnv, "status", "--database-url", db.URL, "--json", "--rows-per-shard", "100")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.ElementsMatch(t, []string{
		"schema_version", "latest_schema_version", "rows", "capacity", "rows_per_shard",
		"fullest_shards", "table_bytes", "index_bytes", "live_tuples", "dead_tuples",
	}, keys(got), "the JSON field names are stable")

	var report statusReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.NotNil(t, report.SchemaVersion)
	require.Equal(t, latest, *report.SchemaVersion)
	require.Equal(t, latest, report.LatestSchemaVersion)
	require.EqualValues(t, 40, report.Rows)
	require.EqualValues(t, 256*100, report.Capacity)
	require.Equal(t, 100, report.RowsPerShard)
	require.Len(t, report.FullestShards, postgres.FullestShardCount)
	for i, sh := range want.Fullest {
		require.Equal(t, shardReport{Shard: sh.Shard, Rows: sh.Rows, Headroom: sh.Headroom}, report.FullestShards[i])
	}
	require.EqualValues(t, 100-want.Fullest[0].Rows, report.FullestShards[0].Headroom)
	require.Positive(t, report.FullestShards[0].Rows)
	require.Positive(t, report.TableBytes)
	require.Positive(t, report.IndexBytes)

	r = execute(t, noEnv, "status", "--database-url", db.URL)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Regexp(t, fmt.Sprintf(`(?m)^schema version +%d$`, latest), r.stdout)
	require.Regexp(t, `(?m)^rows +40 of 1048576 \(0\.00%\)`, r.stdout)
	require.Regexp(t, `(?m)^table size +\d+\.\d KiB \(\d+ bytes\)$`, r.stdout)
	require.Regexp(t, `(?m)^dead tuples +\d+ \(estimate\)$`, r.stdout)
	first := want.Fullest[0]
	require.Regexp(t, fmt.Sprintf(`(?m)^ +%d +%d +%d$`, first.Shard, first.Rows, 4096-first.Rows), r.stdout,
		"the fullest shard heads the table, with its headroom under the default rows per shard")
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestStatusOfAnOlderOrUntrackedSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	latest, _, err := latestSchema("public")
	require.NoError(t, err)
	_, err = db.Pool.Exec(context.Background(), "UPDATE runlimit_schema_version SET version = $1", latest-1)
	require.NoError(t, err)
	r := execute(t, noEnv, "status", "--database-url", db.URL)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stdout, fmt.Sprintf(`%d (this runlimit knows %d: run "runlimit migrate")`, latest-1, latest))

	_, err = db.Pool.Exec(context.Background(), "DROP TABLE runlimit_schema_version")
	require.NoError(t, err)
	r = execute(t, noEnv, "status", "--database-url", db.URL)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stdout, "not recorded")
}

func TestStatusWithoutTheSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	r := execute(t, noEnv, "status", "--database-url", db.URL)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `runlimit status: `)
	require.Contains(t, r.stderr, `run "runlimit migrate" first`)
	require.Empty(t, r.stdout)
}

func TestStatusFlagValidation(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"0", "65537"} {
		r := execute(t, noEnv, "status", "--database-url", "postgres://127.0.0.1:1/x", "--rows-per-shard", n)
		require.Equal(t, 2, r.code)
		require.Contains(t, r.stderr, "--rows-per-shard is "+n+", want 1 to 65536")
	}
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB (1024 bytes)"},
		{1536, "1.5 KiB (1536 bytes)"},
		{8192 * 1024, "8.0 MiB (8388608 bytes)"},
		{3 << 40, "3.0 TiB (3298534883328 bytes)"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, formatBytes(tt.n))
	}
}

// status gives up at --timeout when a table lock held elsewhere (an ALTER
// TABLE's) holds up its reads, rather than hanging a monitoring script,
// and says it timed out.
func TestStatusIsBoundedByItsTimeout(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	for _, table := range []string{"runlimit_schema_version", "runlimit_fixed_windows"} {
		tx, err := db.Pool.Begin(context.Background())
		require.NoError(t, err)
		_, err = tx.Exec(context.Background(), "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE")
		require.NoError(t, err)
		results := make(chan result, 1)
		go func() {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"status", "--timeout", "200ms", "--database-url", db.URL}, noEnv, &stdout, &stderr)
			results <- result{code: code, stdout: stdout.String(), stderr: stderr.String()}
		}()
		var r result
		select {
		case r = <-results:
		case <-time.After(30 * time.Second):
			_ = tx.Rollback(context.Background())
			t.Fatalf("status waited for the lock on %s past its timeout", table)
		}
		require.NoError(t, tx.Rollback(context.Background()))
		require.Equal(t, 1, r.code, "%s: stdout: %s", table, r.stdout)
		require.Regexp(t, "timed out|timeout", r.stderr, table)
	}
	r := execute(t, noEnv, "status", "--timeout", "0s", "--database-url", db.URL)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "--timeout")
}
