package postgres

import (
	"cmp"
	"context"
	"slices"

	"github.com/runlimit/runlimit/ports"
)

// FullestShardCount is how many shards [TableStats.Fullest] lists.
const FullestShardCount = 8

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
	err := s.read(ctx, func(ss *session) error {
		return s.readLedger(ss, &ledger)
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
	if err := s.refuseRead(ctx); err != nil {
		return TableStats{}, err
	}
	var ledger [ShardCount]int64
	ts := TableStats{
		Capacity:     int64(ShardCount) * int64(s.cfg.RowsPerShard),
		RowsPerShard: s.cfg.RowsPerShard,
	}
	err := s.read(ctx, func(ss *session) error {
		if err := s.readLedger(ss, &ledger); err != nil {
			return err
		}
		if !ss.send(false) {
			return errCallerLeft
		}
		defer ss.received()
		return ss.conn.QueryRow(ss.ctx, s.sql.sizes).Scan(&ts.TableBytes, &ts.IndexBytes, &ts.LiveTuples, &ts.DeadTuples)
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
// store's timeouts, in a transaction bounded by them (see bound).
func (s *Store) read(ctx context.Context, f func(*session) error) error {
	if err := s.refuseRead(ctx); err != nil {
		return err
	}
	return s.maintain(ctx, opStats, func(ss *session) error {
		_, err := s.bound(ss)
		if err == nil {
			err = f(ss)
		}
		if err != nil {
			return interpretMaintenanceError(opStats, stageOpen, err)
		}
		return nil
	})
}

// readLedger fills ledger from the capacity ledger, which must hold exactly
// one row per shard, each with a count the ledger's constraints allow: a
// count an admission would refuse as [ErrLedger] is refused here too, so
// that Stats reports no headroom and Ready no readiness that admissions
// do not have.
func (s *Store) readLedger(ss *session, ledger *[ShardCount]int64) error {
	if !ss.send(false) {
		return errCallerLeft
	}
	defer ss.received()
	rows, err := ss.conn.Query(ss.ctx, s.sql.ledger)
	if err != nil {
		return err
	}
	defer rows.Close()
	var seen int
	for rows.Next() {
		var shard int16
		var n int64
		if err := rows.Scan(&shard, &n); err != nil {
			return err
		}
		if shard < 0 || int(shard) >= ShardCount || n < 0 || n > MaxRowsPerShard {
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

// refuseRead returns the error of a read that cannot start: a nil context,
// or a closed, nil or zero store.
func (s *Store) refuseRead(ctx context.Context) error {
	switch {
	case ctx == nil:
		return &MaintenanceError{Op: opStats, Err: ports.ErrNilContext}
	case s.unusable():
		return &MaintenanceError{Op: opStats, Err: ErrClosed}
	}
	return nil
}
