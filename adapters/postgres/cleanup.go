package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/runlimit/runlimit/ports"
)

// CleanupExpired deletes at most maxRows expired counters and returns how
// many it deleted, freeing their capacity slots. It never deletes an active
// counter and never waits for one an admission holds. An expired counter
// keeps its slot until cleanup deletes it, so hosts run this continuously,
// for example from a ticker in a goroutine of their own.
//
// A negative maxRows is rejected first, matching [domain.ErrInvalidInput],
// whatever the store's state or the context's; a nil context next
// ([ports.ErrNilContext]). Any other error is a
// [*MaintenanceError]; its MayHaveRemovedRows says whether the deletion may
// have committed anyway. A session whose settings the store cannot serve
// ([*SettingError]) is found before anything is deleted.
func (s *Store) CleanupExpired(ctx context.Context, maxRows int) (int, error) {
	switch {
	case maxRows < 0:
		return 0, &MaintenanceError{Op: opCleanup, Err: ErrNegativeMax}
	case ctx == nil:
		return 0, &MaintenanceError{Op: opCleanup, Err: ports.ErrNilContext}
	case s.unusable():
		return 0, &MaintenanceError{Op: opCleanup, Err: ErrClosed}
	case maxRows == 0:
		return 0, nil
	}
	// removed is written by the session's work; it is read only when the
	// work has ended without the caller giving up.
	var removed int
	err := s.maintain(ctx, opCleanup, func(ss *session) error {
		var err error
		removed, err = s.cleanup(ss, maxRows)
		return err
	})
	if err != nil {
		return 0, err
	}
	return removed, nil
}

// cleanup is one cleanup transaction in two round trips: BEGIN and the
// settings (sqlSettings), which it checks before it deletes anything, then
// the deletion and COMMIT.
func (s *Store) cleanup(ss *session, maxRows int) (int, error) {
	var timeouts params
	ss.addTimeouts(&timeouts)
	ss.addLockTimeout(&timeouts)
	t := timeouts.slice()
	var q pgx.Batch
	q.Queue(sqlBegin)
	var (
		replication string
		searchPath  string
	)
	q.Queue(sqlSettings, string(t[0]), string(t[2]), string(t[1])).QueryRow(func(row pgx.Row) error {
		var ignored [3]string
		return row.Scan(&ignored[0], &ignored[1], &ignored[2], &replication, &searchPath)
	})
	if !ss.send(false) {
		return 0, errCallerLeft
	}
	err := ss.conn.SendBatch(ss.ctx, &q).Close()
	ss.received()
	if err != nil {
		return 0, interpretMaintenanceError(opCleanup, stageOpen, err)
	}
	if err := checkSettings(replication, searchPath); err != nil {
		return 0, &MaintenanceError{Op: opCleanup, Err: err}
	}

	q = pgx.Batch{}
	q.Queue(s.sql.cleanup, maxRows)
	q.Queue(sqlCommit)
	if !ss.send(true) {
		return 0, errCallerLeft
	}
	br := ss.conn.SendBatch(ss.ctx, &q)
	removed, st, err := cleanupResults(br)
	_ = br.Close()
	ss.received()
	if err != nil {
		return 0, interpretMaintenanceError(opCleanup, st, err)
	}
	return removed, nil
}

func cleanupResults(br pgx.BatchResults) (int, stage, error) {
	tag, err := br.Exec()
	if err != nil {
		return 0, stageBeforeCommit, err
	}
	removed := tag.RowsAffected()
	tag, err = br.Exec()
	if err != nil {
		return 0, stageCommit, err
	}
	if tag.String() != "COMMIT" {
		return 0, stageCommit, ErrCommitOutcome
	}
	return int(removed), stageCommit, nil
}

// maintain runs work, a cleanup or a stats read, on a pooled connection
// in a session of its own: as for admissions, a caller who gives up gets an
// answer at once and the connection goes back to the pool. What work
// writes may be read only when maintain returns nil: after an error, the
// work may still be running.
func (s *Store) maintain(ctx context.Context, op string, work func(*session) error) error {
	if err := ctx.Err(); err != nil {
		return &MaintenanceError{Op: op, Err: err, Timeout: isTimeout(err)}
	}
	bg := &s.state().bg
	if !bg.enter() {
		return &MaintenanceError{Op: op, Err: ErrClosed}
	}
	defer bg.done()
	conn, err := s.acquire(ctx)
	if err != nil {
		return interpretMaintenanceError(op, stageOpen, err)
	}
	ss := new(session)
	ss.open(ctx, conn, s.cfg.OperationTimeout, bg)
	var werr error
	o := ss.drive(ctx, func() {
		werr = work(ss)
		ss.exit()
	})
	if o.detached || o.left && werr != nil {
		err := ctx.Err()
		return &MaintenanceError{Op: op, MayHaveRemoved: op == opCleanup && mayHaveCommitted(leftStage(o.committing), err),
			Timeout: isTimeout(err), Err: err}
	}
	return ss.blame(werr)
}
