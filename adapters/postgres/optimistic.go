package postgres

import (
	"encoding/binary"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runlimit/runlimit/domain"
)

// optimisticAttempts is how many times a single check tries the optimistic
// protocol before it takes the locked one: a second conflict means the key
// is contended, and the locked protocol queues its admissions instead of
// letting them spoil each other's writes.
const optimisticAttempts = 2

// optimistic runs one attempt of the optimistic protocol for a single
// check (see [Optimistic]): the read, the evaluation of a scratch decision
// and, for an allowed check, the conditional write. It reports done when
// the admission is over: the check's decision is then in the caller's
// batch, replayed from the observation that stood, or err says why not. Not
// done, the write met a concurrent admission and changed nothing, or the
// server aborted the read or the write for a serialization failure (under a
// stricter default isolation than read committed), which committed nothing
// either.
//
// A denial stands on the read alone, with no write to confirm it. The read
// is one statement: one snapshot, taken after the call began, and a clock
// sample taken after the snapshot. An admission of the key that committed
// after the snapshot sampled its clock before it committed, and can only
// have consumed more of the window the denial saw; a new window starts
// only at a sample past the old one's end, which the denial's own sample,
// inside that window, has not reached. What would make the denial wrong
// (a window renewed or a counter removed before the sample) is therefore
// in the snapshot. The one exception is a ledger count that cleanup
// lowered after the snapshot: the check is then denied for storage as it
// would have been a moment earlier.
func (a *admission) optimistic(ss *session, st *connState, rowsPerShard int) (done bool, err error) {
	now, race, err := a.readOptimistic(ss, st)
	if race || err != nil {
		return !race, err
	}
	var obs domain.Observation
	if a.present[0] {
		obs.Counter = a.counters[0]
	} else {
		rows, ok := a.ledgerRows(a.shards[0])
		if !ok {
			return true, &AdmissionError{Op: OpLock, Err: ErrLedger}
		}
		obs.Full = rows >= int64(rowsPerShard)
	}

	if !ss.hold() {
		return true, errCallerLeft
	}
	c := a.batch.Check(0)
	var (
		next domain.Counter
		d    domain.Decision
	)
	commit, err := domain.EvaluateCheck(&c, now, &obs, &next, &d)
	if err != nil {
		ss.release()
		return true, &AdmissionError{Op: OpEvaluate, Err: err}
	}
	if !commit {
		err := a.replay(obs, now, false)
		ss.release()
		return true, err
	}
	a.updates.reset()
	a.inserts.reset()
	if a.present[0] {
		a.updates.add(a.fps[0], a.sks[0], next)
	} else {
		a.inserts.add(a.fps[0], a.sks[0], next)
		p := c.Policy()
		a.inserts.policy = append(a.inserts.policy, p.ID().String())
		a.inserts.scope = append(a.inserts.scope, p.Scope().String())
	}
	ss.release()

	applied, err := a.writeConditional(ss, st, rowsPerShard)
	if err != nil || !applied {
		return err != nil, err
	}
	if !ss.hold() {
		return true, errCallerLeft
	}
	err = a.replay(obs, now, true)
	ss.release()
	return true, err
}

// replay hands the observation that stood to the caller's batch, which
// evaluates it at the same time to the same decision. The caller holds the
// session.
func (a *admission) replay(obs domain.Observation, now domain.Instant, committed bool) error {
	b := a.batch
	b.Observe(0, obs)
	commit, err := b.Evaluate(now)
	if err == nil && commit != committed {
		// The domain is deterministic; a different verdict is a bug, and
		// the write, if any, cannot be taken back.
		return &AdmissionError{Op: OpEvaluate, Err: malformed("the optimistic decision did not replay"), MayHaveConsumed: committed}
	}
	if err != nil {
		return &AdmissionError{Op: OpEvaluate, Err: err, MayHaveConsumed: committed}
	}
	return nil
}

// readOptimistic is round trip 1 of the optimistic protocol: the counter or
// the ledger count, and the database time. race reports a read the server
// aborted for a serialization failure (see lostRace).
func (a *admission) readOptimistic(ss *session, st *connState) (now domain.Instant, race bool, err error) {
	p := &a.params
	var q pgconn.Batch
	p.reset()
	ss.addLockTimeout(p)
	q.ExecStatement(st.stmts[stmtOptTimeouts], p.slice(), binaryFormat, nil)
	// The statement is encoded at once: params can start again.
	p.reset()
	p.addBytea(a.fps, true)
	p.addBytea(a.sks, true)
	p.addInt2(a.shards, true)
	q.ExecStatement(st.stmts[stmtOptRead], p.slice(), binaryFormat, binaryFormat)
	if !ss.send(false) {
		return 0, false, errCallerLeft
	}
	mrr := ss.pc.ExecBatch(ss.ctx, &q)
	a.present[0], a.counters[0], a.ledger = false, domain.Counter{}, a.ledger[:0]
	var (
		sampled bool
		rows    int
		bad     error
	)
	// The timeouts' answer, then the read's row.
	for i := 0; i < 2 && err == nil; i++ {
		if !mrr.NextResult() {
			err = incomplete(nil)
			break
		}
		rr := mrr.ResultReader()
		for i == 1 && rr.NextRow() {
			rows++
			if err := a.decodeOptimistic(rr.Values(), &now, &sampled); err != nil && bad == nil {
				bad = err
			}
		}
		_, err = rr.Close()
	}
	if cerr := mrr.Close(); cerr != nil && (err == nil || errors.Is(err, errIncomplete)) {
		err = cerr
	}
	ss.received()
	switch {
	case lostRace(err):
		return 0, true, nil
	case err != nil:
		ss.forget(err)
		return 0, false, interpretError(OpLock, stageOpen, err)
	case bad != nil:
		return 0, false, interpretError(OpLock, stageOpen, bad)
	case rows != 1:
		return 0, false, interpretError(OpLock, stageOpen, malformed("the read returned no single row"))
	case !sampled:
		return 0, false, interpretError(OpLock, stageOpen, malformed("the read returned no clock sample"))
	}
	return now, false, nil
}

// decodeOptimistic decodes sqlOptRead's row, five columns in binary format
// (see decodeOne).
func (a *admission) decodeOptimistic(v [][]byte, now *domain.Instant, sampled *bool) error {
	if len(v) != 5 {
		return malformed("the read returned a malformed row")
	}
	return a.decodeOne(v, now, sampled)
}

// writeConditional is round trip 2 of the optimistic protocol: the
// conditional write, after the statement that sets its timeouts, as one
// implicit transaction. It reports whether the write applied.
func (a *admission) writeConditional(ss *session, st *connState, rowsPerShard int) (applied bool, err error) {
	p := &a.params
	var q pgconn.Batch
	p.reset()
	locks := 0
	if a.present[0] {
		ss.addLockTimeout(p)
		q.ExecStatement(st.stmts[stmtOptTimeouts], p.slice(), binaryFormat, nil)
		locks = 1
		p.reset()
		a.updates.addParams(p, true)
		old := a.counters[0]
		p.buf = binary.BigEndian.AppendUint64(p.buf, uint64(old.Used))
		p.end()
		p.addTime([]domain.Instant{old.Start}, true)
		p.addTime([]domain.Instant{old.Expires}, true)
		q.ExecStatement(st.stmts[stmtOptUpdate], p.slice(), binaryFormat, nil)
	} else {
		ss.addLockTimeout(p)
		p.addInt8(a.lockIDs, true)
		q.ExecStatement(st.stmts[stmtOptLock], p.slice(), binaryFormat, nil)
		locks = 1
		// The statement is encoded at once: params can start again.
		p.reset()
		a.inserts.addParams(p, true)
		p.addInt2(a.shards, true)
		p.buf = binary.BigEndian.AppendUint64(p.buf, uint64(rowsPerShard))
		p.end()
		q.ExecStatement(st.stmts[stmtOptInsert], p.slice(), binaryFormat, nil)
	}
	// The write commits when the server reaches the Sync: from here on, a
	// failure may have consumed quota.
	if !ss.send(true) {
		return false, errCallerLeft
	}
	mrr := ss.pc.ExecBatch(ss.ctx, &q)
	tag, stage, err := readConditional(mrr, locks)
	// A stricter default isolation than read committed makes the server
	// abort a write that meets a concurrent change, where read committed
	// would have re-read it and applied nothing, and serializable
	// isolation may abort it at its COMMIT: the same conflict.
	race := lostRace(err)
	if race || err == nil && tag.RowsAffected() == 0 {
		ss.nothingCommitted()
	}
	ss.received()
	if race {
		return false, nil
	}
	if err != nil {
		ss.forget(err)
		return false, interpretError(OpCommit, stage, err)
	}
	switch tag.RowsAffected() {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, &AdmissionError{Op: OpCommit, Err: malformed("the conditional write changed more than one row"), MayHaveConsumed: true}
}

// readConditional reads the answers of round trip 2: locks statements
// that set the write's timeouts or take its locks, the write and the implicit COMMIT at the
// Sync, and says at which stage an error was met, as readWritten does for
// the locked protocol: an error of a statement proves nothing was
// committed; one after the write's answer is the commit's own.
func readConditional(mrr *pgconn.MultiResultReader, locks int) (pgconn.CommandTag, stage, error) {
	for range locks {
		if !mrr.NextResult() {
			return pgconn.CommandTag{}, stageBeforeCommit, incomplete(mrr.Close())
		}
		if _, err := mrr.ResultReader().Close(); err != nil {
			_ = mrr.Close()
			return pgconn.CommandTag{}, stageBeforeCommit, err
		}
	}
	if !mrr.NextResult() {
		return pgconn.CommandTag{}, stageBeforeCommit, incomplete(mrr.Close())
	}
	tag, err := mrr.ResultReader().Close()
	if err != nil {
		_ = mrr.Close()
		return tag, stageBeforeCommit, err
	}
	if err := mrr.Close(); err != nil {
		return tag, stageCommit, err
	}
	return tag, stageCommit, nil
}
