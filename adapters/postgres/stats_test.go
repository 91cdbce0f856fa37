package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
)

func TestStatsReportLedgerOccupancy(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{RowsPerShard: 10})
	p := policy(t, "stats", 5, time.Minute)
	for _, c := range f.checksInShard(t, p, 7, 6) {
		requireAllowed(t, admit(t, f.store, c))
	}
	for _, c := range f.checksInShard(t, p, 200, 2) {
		requireAllowed(t, admit(t, f.store, c))
	}

	st, err := f.store.Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(8), st.Entries)
	require.Equal(t, int64(2560), st.Capacity)
	require.Equal(t, 256, st.Shards)
	require.Len(t, st.Headroom, 256)
	require.Equal(t, int64(4), st.Headroom[7])
	require.Equal(t, int64(8), st.Headroom[200])
	require.Equal(t, int64(10), st.Headroom[0])
	require.Equal(t, int64(4), st.MinHeadroom())
	require.NotContains(t, fmt.Sprintf("%+v", st), "\\x")

	// A bound lowered below what a shard holds shows no headroom, not a
	// negative one.
	lowered, _ := f.newStore(t, postgres.Config{RowsPerShard: 5}, nil)
	st, err = lowered.Stats(context.Background())
	require.NoError(t, err)
	require.Zero(t, st.Headroom[7])
	require.Equal(t, int64(3), st.Headroom[200])
}

func TestTableStats(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{RowsPerShard: 10})
	ctx := context.Background()
	_, err := f.db.Pool.Exec(ctx, "ALTER TABLE runlimit_fixed_windows SET (autovacuum_enabled = false)")
	require.NoError(t, err)
	p := policy(t, "table.stats", 5, time.Minute)
	for _, c := range f.checksInShard(t, p, 3, 5) {
		requireAllowed(t, admit(t, f.store, c))
	}
	for _, c := range f.checksInShard(t, p, 9, 3) {
		requireAllowed(t, admit(t, f.store, c))
	}
	for _, c := range f.checksInShard(t, p, 1, 3) {
		requireAllowed(t, admit(t, f.store, c))
	}
	shift(t, f.db.Pool, time.Hour)
	removed, err := f.store.CleanupExpired(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, 2, removed)

	ts, err := f.store.TableStats(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(9), ts.Rows)
	require.Equal(t, int64(2560), ts.Capacity)
	require.Equal(t, 10, ts.RowsPerShard)
	require.Len(t, ts.Fullest, postgres.FullestShardCount)
	var fullestRows int64
	for _, u := range ts.Fullest[:3] {
		fullestRows += u.Rows
		require.Equal(t, 10-u.Rows, u.Headroom)
	}
	require.Equal(t, int64(9), fullestRows)
	require.GreaterOrEqual(t, ts.Fullest[0].Rows, ts.Fullest[1].Rows)
	require.GreaterOrEqual(t, ts.Fullest[1].Rows, ts.Fullest[2].Rows)
	require.Zero(t, ts.Fullest[3].Rows)
	require.Less(t, ts.Fullest[3].Shard, ts.Fullest[4].Shard, "ties in shard order")
	require.Positive(t, ts.TableBytes)
	require.Positive(t, ts.IndexBytes)

	// The statistics collector reports the shift's updates and cleanup's
	// deletions as dead tuples, a little later.
	require.Eventually(t, func() bool {
		ts, err := f.store.TableStats(ctx)
		return err == nil && ts.DeadTuples >= 11
	}, 10*time.Second, 20*time.Millisecond)
}
