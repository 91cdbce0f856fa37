package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// sqlCleanup deletes at most $1 expired rows, oldest expiry first, walking
// the expiry index from its start. The scalar subquery samples the database
// clock once for the whole statement. Rows locked by an admission are
// skipped rather than waited for: such a row is being renewed, and a row
// renewed after the statement's snapshot is re-read when locked and fails
// the re-checked expiry condition, so an active row is never deleted. The
// rows are then deleted by their physical address (a TID scan), which
// cannot change while this statement holds their locks; a join back on the
// key would let the planner scan the whole table. The ledger's delete
// trigger frees the rows' slots in the same transaction.
const sqlCleanup = `DELETE FROM runlimit_fixed_windows
WHERE ctid = ANY (ARRAY(
    SELECT e.ctid
    FROM runlimit_fixed_windows AS e
    WHERE e.window_expires_at <= (SELECT pg_catalog.clock_timestamp())
    ORDER BY e.window_expires_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED))`

// CleanupExpired deletes at most maxRows expired counters and returns how
// many it deleted, freeing their capacity slots. It never deletes an active
// counter and never waits for one an admission holds. An expired counter
// keeps its slot until cleanup deletes it, so hosts run this continuously,
// for example from a ticker in a goroutine of their own.
//
// An error is a [*MaintenanceError]; its MayHaveRemovedRows says whether the
// deletion may have committed anyway.
func (s *Store) CleanupExpired(ctx context.Context, maxRows int) (int, error) {
	switch {
	case s.closed.Load():
		return 0, &MaintenanceError{Op: opCleanup, Err: ErrClosed}
	case maxRows < 0:
		return 0, &MaintenanceError{Op: opCleanup, Err: ErrNegativeMax}
	case maxRows == 0:
		return 0, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, &MaintenanceError{Op: opCleanup, Err: err, Timeout: isTimeout(err)}
	}
	conn, opCtx, cancel, err := s.acquire(ctx)
	if err != nil {
		return 0, interpretMaintenanceError(opCleanup, stageOpen, err)
	}
	defer cancel()
	defer finish(opCtx, conn)

	var q pgx.Batch
	q.Queue(sqlBegin)
	q.Queue(sqlTimeouts, serverTimeout(opCtx))
	q.Queue(sqlCleanup, maxRows)
	q.Queue(sqlCommit)
	br := conn.SendBatch(opCtx, &q)
	removed, st, err := cleanupResults(br)
	_ = br.Close()
	if err != nil {
		return 0, interpretMaintenanceError(opCleanup, st, err)
	}
	return removed, nil
}

func cleanupResults(br pgx.BatchResults) (int, stage, error) {
	var removed int64
	for i := range 3 { // BEGIN, timeouts, DELETE
		tag, err := br.Exec()
		if err != nil {
			return 0, stageBeforeCommit, err
		}
		if i == 2 {
			removed = tag.RowsAffected()
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return 0, stageCommit, err
	}
	if tag.String() != "COMMIT" {
		return 0, stageCommit, ErrCommitOutcome
	}
	return int(removed), stageCommit, nil
}
