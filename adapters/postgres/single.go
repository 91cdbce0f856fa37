package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/domain"
)

// A single check, the common case, takes its own path: round trip 1 is
// BEGIN and one call of runlimit_lock_counter (migration 003), which takes
// the settings, the advisory lock, the row lock, the ledger lock of a new
// key and the clock sample in the protocol's order, statement after
// statement inside the server; round trip 2 is one UPDATE or INSERT and
// COMMIT. Both [Store.AdmitCheck] and [Store.Admit] of a batch of one take
// it.
//
// The statements are prepared once per connection under names of their own
// and sent through pgconn with parameters and results in PostgreSQL's binary
// format, encoded here: pgx's general-purpose encoding cost more client CPU
// than the rest of the admission.
const (
	// sqlLockCounter calls the function in the select list rather than in
	// FROM: its answer comes back as one composite value, without the
	// function scan and the tuple store that FROM would put around it.
	sqlLockCounter = `SELECT runlimit_lock_counter($1, $2, $3, $4, $5)`

	sqlUpdateOne = `UPDATE runlimit_fixed_windows
SET used = $3, window_started_at = $4, window_expires_at = $5
WHERE config_fingerprint = $1 AND subject_key = $2`

	sqlInsertOne = `INSERT INTO runlimit_fixed_windows
    (policy_id, scope_id, config_fingerprint, subject_key, window_started_at, window_expires_at, used)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
)

// singleStatements are the prepared statements of the single-check path, by
// the name each is prepared under.
var singleStatements = [...]struct{ name, sql string }{
	stmtBegin:  {"runlimit_begin", sqlBegin},
	stmtLock:   {"runlimit_lock_counter", sqlLockCounter},
	stmtUpdate: {"runlimit_update_one", sqlUpdateOne},
	stmtInsert: {"runlimit_insert_one", sqlInsertOne},
	stmtCommit: {"runlimit_commit", sqlCommit},
}

const (
	stmtBegin = iota
	stmtLock
	stmtUpdate
	stmtInsert
	stmtCommit
	stmtCount
)

// binaryFormat, as a format list of one, puts every parameter or result
// column in binary format.
var binaryFormat = []int16{1}

// postgresEpoch is 2000-01-01 00:00:00 UTC, the origin of PostgreSQL's
// binary timestamps, in Unix microseconds (the origin of domain.Instant).
const postgresEpoch = 946_684_800_000_000

// AdmitCheck applies a single check exactly as [Store.Admit] applies a batch
// holding only check, in the same two round trips (one and a ROLLBACK when
// it is denied), without building a batch. It is the path
// [github.com/runlimit/runlimit/app.Limiter.Check] takes. A denial is a
// decision; errors are those of Admit, and an invalid check is rejected
// before the database is touched.
func (s *Store) AdmitCheck(ctx context.Context, check domain.Check) (domain.Decision, error) {
	if s.closed.Load() {
		return domain.Decision{}, &CheckError{Op: OpAdmit, Err: ErrClosed}
	}
	if err := check.Validate(); err != nil {
		return domain.Decision{}, err
	}
	if err := ctx.Err(); err != nil {
		return domain.Decision{}, &CheckError{Op: OpAdmit, Err: err, Timeout: isTimeout(err)}
	}
	conn, opCtx, cancel, err := s.acquire(ctx)
	if err != nil {
		return domain.Decision{}, interpretError(OpAcquire, err)
	}
	defer cancel()
	a := s.admissions.Get().(*admission)
	defer s.admissions.Put(a)
	d, err := a.one.admitCheck(opCtx, conn, &check, s.cfg.RowsPerShard)
	finish(opCtx, conn)
	return d, err
}

func (o *single) admitCheck(ctx context.Context, conn *pgxpool.Conn, c *domain.Check, rowsPerShard int) (domain.Decision, error) {
	o.prepare(c.CounterKey())
	present, now, err := o.lockAndRead(ctx, conn, rowsPerShard)
	if err != nil {
		return domain.Decision{}, err
	}
	var (
		next domain.Counter
		d    domain.Decision
	)
	commit, err := domain.EvaluateCheck(c, now, &o.obs, &next, &d)
	if err != nil {
		return domain.Decision{}, &CheckError{Op: OpEvaluate, Err: err}
	}
	if !commit {
		// finish rolls back, or closes the connection; the denial stands.
		return d, nil
	}
	if err := o.writeAndCommit(ctx, conn, c, present, next); err != nil {
		return domain.Decision{}, err
	}
	return d, nil
}

// admitBatchOfOne drives a batch of one check through the single-check
// statements.
func (o *single) admitBatchOfOne(ctx context.Context, conn *pgxpool.Conn, b *domain.Batch, rowsPerShard int) error {
	o.prepare(b.Key(0))
	present, now, err := o.lockAndRead(ctx, conn, rowsPerShard)
	if err != nil {
		return err
	}
	b.Observe(0, o.obs)
	commit, err := b.Evaluate(now)
	if err != nil {
		return &CheckError{Op: OpEvaluate, Err: err}
	}
	if !commit {
		return nil
	}
	c := b.Check(0)
	return o.writeAndCommit(ctx, conn, &c, present, b.Next(0))
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
	text   []byte // the timeout, then the policy and scope ids
	params [7][]byte
	obs    domain.Observation
	stmts  [stmtCount]*pgconn.StatementDescription
}

func (o *single) prepare(k domain.CounterKey) {
	o.key = k.Bytes()
	binary.BigEndian.PutUint64(o.lockID[:], uint64(AdvisoryLockID(k)))
	binary.BigEndian.PutUint16(o.shard[:], uint16(ShardOf(k)))
}

// statements looks up the connection's prepared statements, preparing them
// on its first admission.
func (o *single) statements(ctx context.Context, conn *pgxpool.Conn) error {
	c := conn.Conn()
	for i, st := range singleStatements {
		sd, err := c.Prepare(ctx, st.name, st.sql)
		if err != nil {
			return err
		}
		o.stmts[i] = sd
	}
	return nil
}

// lockAndRead is round trip 1. It fills o.obs and returns whether the key
// has a row and the database time sampled after every lock was granted.
func (o *single) lockAndRead(ctx context.Context, conn *pgxpool.Conn, rowsPerShard int) (present bool, now domain.Instant, err error) {
	if err := o.statements(ctx, conn); err != nil {
		return false, 0, interpretError(OpLock, err)
	}
	o.text = appendServerTimeout(ctx, o.text[:0])
	o.params = [7][]byte{o.lockID[:], o.key[:32], o.key[32:], o.shard[:], o.text}
	var q pgconn.Batch
	q.ExecStatement(o.stmts[stmtBegin], nil, nil, nil)
	q.ExecStatement(o.stmts[stmtLock], o.params[:5], binaryFormat, binaryFormat)
	mrr := conn.Conn().PgConn().ExecBatch(ctx, &q)
	present, now, err = o.readLocked(mrr, rowsPerShard)
	// The reader's own error, when it has one, is the cause: a result that
	// ended early did so because of it.
	if cerr := mrr.Close(); cerr != nil {
		err = cerr
	}
	if err != nil {
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
				err = errors.New("runlimit: the lock returned a malformed answer")
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
		return false, 0, errors.New("runlimit: the lock returned no single row")
	}
	return present, now, err
}

// decodeLocked decodes runlimit_lock_counter's answer: used, started_at,
// expires_at (NULL when the key has no row), shard_rows (NULL when it has
// one) and sampled_at.
func (o *single) decodeLocked(v *[5][]byte, rowsPerShard int) (present bool, now domain.Instant, err error) {
	var ok bool
	if now, ok = decodeTime(v[4]); !ok {
		return false, 0, errors.New("runlimit: the read returned no clock sample")
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
func (o *single) writeAndCommit(ctx context.Context, conn *pgxpool.Conn, c *domain.Check, present bool, next domain.Counter) error {
	binary.BigEndian.PutUint64(o.used[:], uint64(next.Used))
	binary.BigEndian.PutUint64(o.start[:], uint64(int64(next.Start)-postgresEpoch))
	binary.BigEndian.PutUint64(o.expire[:], uint64(int64(next.Expires)-postgresEpoch))
	var q pgconn.Batch
	if present {
		o.params = [7][]byte{o.key[:32], o.key[32:], o.used[:], o.start[:], o.expire[:]}
		q.ExecStatement(o.stmts[stmtUpdate], o.params[:5], binaryFormat, nil)
	} else {
		p := c.Policy()
		o.text = append(o.text[:0], p.ID().String()...)
		policy := len(o.text)
		o.text = append(o.text, p.Scope().String()...)
		o.params = [7][]byte{o.text[:policy], o.text[policy:], o.key[:32], o.key[32:], o.start[:], o.expire[:], o.used[:]}
		q.ExecStatement(o.stmts[stmtInsert], o.params[:], binaryFormat, nil)
	}
	q.ExecStatement(o.stmts[stmtCommit], nil, nil, nil)
	mrr := conn.Conn().PgConn().ExecBatch(ctx, &q)
	op, err := readWritten(mrr)
	// When every result, COMMIT's included, has arrived, the check is
	// committed whatever closing the reader says; finish then closes the
	// connection rather than pooling it.
	_ = mrr.Close()
	if err != nil {
		return interpretError(op, err)
	}
	return nil
}

// readWritten reads the write's result and COMMIT's, as writeResults does
// for a batch.
func readWritten(mrr *pgconn.MultiResultReader) (string, error) {
	if !mrr.NextResult() {
		return writeFailure(mrr.Close())
	}
	if _, err := mrr.ResultReader().Close(); err != nil {
		return writeFailure(err)
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

// writeFailure attributes an error met before the write's result to the
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

// errIncomplete: the server's answer ended early without an error.
var errIncomplete = errors.New("runlimit: the server's answer ended early")

// decodeRecord splits a composite value in binary format (a field count,
// then each field's type, length or -1 for NULL, and bytes) into fields,
// which must match its field count.
func decodeRecord(b []byte, fields [][]byte) bool {
	if len(b) < 4 || int(binary.BigEndian.Uint32(b)) != len(fields) {
		return false
	}
	b = b[4:]
	for i := range fields {
		if len(b) < 8 {
			return false
		}
		n := int32(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
		switch {
		case n == -1:
			fields[i] = nil
		case n < 0 || int(n) > len(b):
			return false
		default:
			fields[i], b = b[:n:n], b[n:]
		}
	}
	return len(b) == 0
}

func decodeInt8(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b)), true
}

// decodeTime decodes a binary timestamptz. Infinite timestamps, which the
// table's constraints forbid, are not a time.
func decodeTime(b []byte) (domain.Instant, bool) {
	us, ok := decodeInt8(b)
	if !ok || us == 1<<63-1 || us == -1<<63 || us > 1<<63-1-postgresEpoch {
		return 0, false
	}
	return domain.Instant(us + postgresEpoch), true
}

// appendServerTimeout appends the statement, lock and idle-in-transaction
// timeout of a transaction to b, in the form SET accepts: what is left of
// ctx's budget, less a margin so that the server's timeout, which leaves a
// usable connection, usually fires before the client's deadline, which
// closes it.
func appendServerTimeout(ctx context.Context, b []byte) []byte {
	left := time.Second
	if deadline, ok := ctx.Deadline(); ok {
		left = time.Until(deadline)
	}
	left -= min(left/10, 100*time.Millisecond)
	b = strconv.AppendInt(b, max(left.Milliseconds(), 1), 10)
	return append(b, "ms"...)
}
