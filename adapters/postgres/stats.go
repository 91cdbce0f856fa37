package postgres

import (
	"cmp"
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/runlimit/runlimit/ports"
)

// FullestShardCount is how many shards [TableStats.Fullest] lists.
const FullestShardCount = 8

const (
	sqlLedger = `SELECT shard, rows FROM runlimit_capacity_shards ORDER BY shard`
	sqlSizes  = `SELECT pg_catalog.pg_table_size(c.oid), pg_catalog.pg_indexes_size(c.oid),
       COALESCE(s.n_live_tup, 0), COALESCE(s.n_dead_tup, 0)
FROM pg_catalog.pg_class AS c
LEFT JOIN pg_catalog.pg_stat_user_tables AS s ON s.relid = c.oid
WHERE c.oid = 'runlimit_fixed_windows'::regclass`
)

// TableStats is an operator's view of the store: occupancy from the
// capacity ledger (exact), and the table's size and dead tuples from
// PostgreSQL's statistics (estimates).
type TableStats struct {
	// Rows counts stored counters, expired ones not yet cleaned up included.
	Rows int64
	// Capacity is 256 shards times RowsPerShard.
	Capacity int64
	// RowsPerShard is the store's configured bound per shard.
	RowsPerShard int
	// Fullest lists the fullest shards, fullest first (ties by shard
	// number): the first to deny new keys.
	Fullest []ShardUsage
	// TableBytes is the table's size on disk, TOAST and maps included.
	TableBytes int64
	// IndexBytes is the size of the table's indexes.
	IndexBytes int64
	// LiveTuples and DeadTuples are the statistics collector's estimates;
	// many dead tuples mean vacuum is not keeping up.
	LiveTuples, DeadTuples int64
}

// ShardUsage is one capacity shard's occupancy.
type ShardUsage struct {
	Shard    int
	Rows     int64
	Headroom int64 // RowsPerShard - Rows, never below 0
}

// Stats reports occupancy from the capacity ledger: entries, capacity, the
// 256 shards and each shard's headroom. A shard holding more rows than
// RowsPerShard (the bound was lowered) has headroom 0.
func (s *Store) Stats(ctx context.Context) (ports.Stats, error) {
	var ledger [ShardCount]int64
	err := s.read(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		return readLedger(ctx, conn, &ledger)
	})
	if err != nil {
		return ports.Stats{}, err
	}
	st := ports.Stats{
		Capacity: int64(ShardCount) * int64(s.cfg.RowsPerShard),
		Shards:   ShardCount,
		Headroom: make([]int64, ShardCount),
	}
	for sh, rows := range ledger {
		st.Entries += rows
		st.Headroom[sh] = s.headroom(rows)
	}
	return st, nil
}

// TableStats reports occupancy, the fullest shards, sizes and dead tuples,
// for dashboards and the runlimit status command.
func (s *Store) TableStats(ctx context.Context) (TableStats, error) {
	var ledger [ShardCount]int64
	ts := TableStats{
		Capacity:     int64(ShardCount) * int64(s.cfg.RowsPerShard),
		RowsPerShard: s.cfg.RowsPerShard,
	}
	err := s.read(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		if err := readLedger(ctx, conn, &ledger); err != nil {
			return err
		}
		return conn.QueryRow(ctx, sqlSizes).Scan(&ts.TableBytes, &ts.IndexBytes, &ts.LiveTuples, &ts.DeadTuples)
	})
	if err != nil {
		return TableStats{}, err
	}
	usage := make([]ShardUsage, ShardCount)
	for sh, rows := range ledger {
		ts.Rows += rows
		usage[sh] = ShardUsage{Shard: sh, Rows: rows, Headroom: s.headroom(rows)}
	}
	slices.SortStableFunc(usage, func(a, b ShardUsage) int { return cmp.Compare(b.Rows, a.Rows) })
	ts.Fullest = usage[:FullestShardCount:FullestShardCount]
	return ts, nil
}

func (s *Store) headroom(rows int64) int64 { return max(int64(s.cfg.RowsPerShard)-rows, 0) }

// read runs a read-only query function on a connection held within the
// store's timeouts.
func (s *Store) read(ctx context.Context, f func(context.Context, *pgx.Conn) error) error {
	if s.closed.Load() {
		return &MaintenanceError{Op: opStats, Err: ErrClosed}
	}
	conn, opCtx, cancel, err := s.acquire(ctx)
	if err != nil {
		return interpretMaintenanceError(opStats, stageOpen, err)
	}
	defer cancel()
	defer finish(opCtx, conn)
	if err := f(opCtx, conn.Conn()); err != nil {
		return interpretMaintenanceError(opStats, stageOpen, err)
	}
	return nil
}

// readLedger fills ledger from the capacity ledger, which must hold exactly
// one row per shard.
func readLedger(ctx context.Context, conn *pgx.Conn, ledger *[ShardCount]int64) error {
	rows, err := conn.Query(ctx, sqlLedger)
	if err != nil {
		return err
	}
	var seen int
	for rows.Next() {
		var shard int16
		var n int64
		if err := rows.Scan(&shard, &n); err != nil {
			rows.Close()
			return err
		}
		if shard < 0 || int(shard) >= ShardCount {
			rows.Close()
			return ErrLedger
		}
		ledger[shard] = n
		seen++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if seen != ShardCount {
		return ErrLedger
	}
	return nil
}
