package postgres

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runlimit/runlimit/domain"
)

// A single check, the common case, takes its own path: round trip 1 is
// BEGIN and one call of runlimit_lock_counter, round trip 2 one UPDATE or
// INSERT and COMMIT (see statements.go). Both [Store.AdmitCheck] and
// [Store.Admit] of a batch of one take it.

// AdmitCheck applies a single check exactly as [Store.Admit] applies a batch
// holding only check, in the same two round trips (one and a ROLLBACK when
// it is denied), without building a batch. It is the path
// [github.com/runlimit/runlimit/app.Limiter.Check] takes. A denial is a
// decision; errors are those of Admit, and an invalid check is rejected
// before anything else, a closed store or a done context included.
func (s *Store) AdmitCheck(ctx context.Context, check domain.Check) (domain.Decision, error) {
	if err := check.Validate(); err != nil {
		return domain.Decision{}, err
	}
	if s.closed.Load() {
		return domain.Decision{}, &AdmissionError{Op: OpAdmit, Err: ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return domain.Decision{}, &AdmissionError{Op: OpAdmit, Err: err, Timeout: isTimeout(err)}
	}
	conn, err := s.acquire(ctx)
	if err != nil {
		return domain.Decision{}, interpretError(OpAcquire, err)
	}
	a := s.admissions.Get().(*admission)
	a.kind, a.check = kindCheck, check
	a.one.prepare(check.CounterKey())
	return s.drive(ctx, conn, a)
}

func (o *single) admitCheck(ss *session, st *connState, c *domain.Check, rowsPerShard int) (domain.Decision, error) {
	present, now, err := o.lockAndRead(ss, st, rowsPerShard)
	if err != nil {
		return domain.Decision{}, err
	}
	var (
		next domain.Counter
		d    domain.Decision
	)
	commit, err := domain.EvaluateCheck(c, now, &o.obs, &next, &d)
	if err != nil {
		return domain.Decision{}, &AdmissionError{Op: OpEvaluate, Err: err}
	}
	if !commit {
		// The session rolls back, or closes the connection; the denial
		// stands.
		return d, nil
	}
	if err := o.writeAndCommit(ss, st, c, present, next); err != nil {
		return domain.Decision{}, err
	}
	return d, nil
}

// admitBatchOfOne drives a batch of one check through the single-check
// statements. The batch is the caller's: it is touched only while the
// caller waits.
func (o *single) admitBatchOfOne(ss *session, st *connState, b *domain.Batch, rowsPerShard int) error {
	present, now, err := o.lockAndRead(ss, st, rowsPerShard)
	if err != nil {
		return err
	}
	if !ss.hold() {
		return errCallerLeft
	}
	b.Observe(0, o.obs)
	commit, err := b.Evaluate(now)
	if err != nil || !commit {
		ss.release()
		if err != nil {
			return &AdmissionError{Op: OpEvaluate, Err: err}
		}
		return nil
	}
	c, next := b.Check(0), b.Next(0)
	ss.release()
	return o.writeAndCommit(ss, st, &c, present, next)
}

// single is the scratch memory of one single-check admission: the key and
// the parameters in PostgreSQL's binary format.
type single struct {
	key    [domain.CounterKeySize]byte
	lockID [8]byte
	shard  [2]byte
	used   [8]byte
	start  [8]byte
	expire [8]byte
	text   []byte // the timeouts, then the policy and scope ids
	params [7][]byte
	obs    domain.Observation
}

func (o *single) prepare(k domain.CounterKey) {
	o.key = k.Bytes()
	binary.BigEndian.PutUint64(o.lockID[:], uint64(AdvisoryLockID(k)))
	binary.BigEndian.PutUint16(o.shard[:], uint16(ShardOf(k)))
}

// lockAndRead is round trip 1. It fills o.obs and returns whether the key
// has a row and the database time sampled after every lock was granted.
func (o *single) lockAndRead(ss *session, st *connState, rowsPerShard int) (present bool, now domain.Instant, err error) {
	o.text = appendServerTimeout(o.text[:0], ss.wait)
	wait := len(o.text)
	o.text = appendServerTimeout(o.text, ss.budget)
	o.params = [7][]byte{o.lockID[:], o.key[:32], o.key[32:], o.shard[:], o.text[:wait], o.text[wait:]}
	var q pgconn.Batch
	q.ExecStatement(st.stmts[stmtBegin], nil, nil, nil)
	q.ExecStatement(st.stmts[stmtLockOne], o.params[:6], binaryFormat, binaryFormat)
	if !ss.send(false) {
		return false, 0, errCallerLeft
	}
	mrr := ss.pc.ExecBatch(ss.ctx, &q)
	present, now, err = o.readLocked(mrr, rowsPerShard)
	// The reader's own error, when it has one, is the cause: a result that
	// ended early did so because of it.
	if cerr := mrr.Close(); cerr != nil {
		err = cerr
	}
	ss.received()
	if err != nil {
		ss.forget(err)
		return false, 0, interpretError(OpLock, err)
	}
	return present, now, nil
}

// readLocked reads BEGIN's result and runlimit_lock_counter's row.
func (o *single) readLocked(mrr *pgconn.MultiResultReader, rowsPerShard int) (present bool, now domain.Instant, err error) {
	if !mrr.NextResult() {
		return false, 0, errIncomplete
	}
	if _, err := mrr.ResultReader().Close(); err != nil {
		return false, 0, err
	}
	if !mrr.NextResult() {
		return false, 0, errIncomplete
	}
	rr := mrr.ResultReader()
	rows := 0
	for rr.NextRow() {
		if v := rr.Values(); len(v) == 1 && rows == 0 {
			// The value lives in the connection's read buffer until the next
			// message; it is decoded before that.
			var fields [5][]byte
			if !decodeRecord(v[0], fields[:]) {
				err = malformed("the lock returned a malformed answer")
			} else {
				present, now, err = o.decodeLocked(&fields, rowsPerShard)
			}
		}
		rows++
	}
	if _, cerr := rr.Close(); cerr != nil {
		return false, 0, cerr
	}
	if rows != 1 {
		return false, 0, malformed("the lock returned no single row")
	}
	return present, now, err
}

// decodeLocked decodes runlimit_lock_counter's answer: used, started_at,
// expires_at (NULL when the key has no row), shard_rows (NULL when it has
// one) and sampled_at.
func (o *single) decodeLocked(v *[5][]byte, rowsPerShard int) (present bool, now domain.Instant, err error) {
	var ok bool
	if now, ok = decodeTime(v[4]); !ok {
		return false, 0, malformed("the read returned no clock sample")
	}
	o.obs = domain.Observation{}
	if v[0] != nil {
		used, ok1 := decodeInt8(v[0])
		start, ok2 := decodeTime(v[1])
		expires, ok3 := decodeTime(v[2])
		if !ok1 || !ok2 || !ok3 {
			// A counter the domain rejects as corrupt, so that the admission
			// fails closed as the batch path does.
			o.obs.Counter = domain.Counter{Used: -1}
			return true, now, nil
		}
		o.obs.Counter = domain.Counter{Used: used, Start: start, Expires: expires}
		return true, now, nil
	}
	rows, ok := decodeInt8(v[3])
	if !ok {
		return false, 0, ErrLedger
	}
	// The earliest expiry of a full shard is left unknown: finding it would
	// scan the table, as no index orders rows by shard.
	o.obs.Full = rows >= int64(rowsPerShard)
	return false, now, nil
}

// writeAndCommit is round trip 2 of an allowed check: the new counter and
// COMMIT.
func (o *single) writeAndCommit(ss *session, st *connState, c *domain.Check, present bool, next domain.Counter) error {
	binary.BigEndian.PutUint64(o.used[:], uint64(next.Used))
	binary.BigEndian.PutUint64(o.start[:], uint64(int64(next.Start)-postgresEpoch))
	binary.BigEndian.PutUint64(o.expire[:], uint64(int64(next.Expires)-postgresEpoch))
	var q pgconn.Batch
	if present {
		o.params = [7][]byte{o.key[:32], o.key[32:], o.used[:], o.start[:], o.expire[:]}
		q.ExecStatement(st.stmts[stmtUpdateOne], o.params[:5], binaryFormat, nil)
	} else {
		p := c.Policy()
		o.text = append(o.text[:0], p.ID().String()...)
		policy := len(o.text)
		o.text = append(o.text, p.Scope().String()...)
		o.params = [7][]byte{o.text[:policy], o.text[policy:], o.key[:32], o.key[32:], o.start[:], o.expire[:], o.used[:]}
		q.ExecStatement(st.stmts[stmtInsertOne], o.params[:], binaryFormat, nil)
	}
	q.ExecStatement(st.stmts[stmtCommit], nil, nil, nil)
	if !ss.send(true) {
		return errCallerLeft
	}
	mrr := ss.pc.ExecBatch(ss.ctx, &q)
	op, err := readWritten(mrr, 1)
	// When every result, COMMIT's included, has arrived, the check is
	// committed whatever closing the reader says; the session then closes
	// the connection rather than pooling it.
	_ = mrr.Close()
	ss.received()
	if err != nil {
		ss.forget(err)
		return interpretError(op, err)
	}
	return nil
}

// readWritten reads the results of writes write statements and COMMIT's.
// An error is attributed to OpWrite only when the server reported it for a
// write, which proves COMMIT was skipped; any other failure of the round
// trip (a timeout, a broken connection) leaves COMMIT's outcome unknown.
// COMMIT of a transaction that had failed answers ROLLBACK instead of an
// error.
func readWritten(mrr *pgconn.MultiResultReader, writes int) (string, error) {
	for range writes {
		if !mrr.NextResult() {
			return writeFailure(mrr.Close())
		}
		if _, err := mrr.ResultReader().Close(); err != nil {
			return writeFailure(err)
		}
	}
	if !mrr.NextResult() {
		return OpCommit, commitFailure(mrr.Close())
	}
	tag, err := mrr.ResultReader().Close()
	if err != nil {
		return OpCommit, err
	}
	if tag.String() != "COMMIT" {
		return OpCommit, ErrCommitOutcome
	}
	return OpCommit, nil
}

// writeFailure attributes an error met before a write's result to the
// write only when the server reported it, which proves COMMIT was skipped;
// anything else leaves COMMIT's outcome unknown.
func writeFailure(err error) (string, error) {
	if err == nil {
		err = errIncomplete
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return OpWrite, err
	}
	return OpCommit, err
}

func commitFailure(err error) error {
	if err == nil {
		return errIncomplete
	}
	return err
}
