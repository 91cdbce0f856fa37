package postgres

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/domain"
)

// Admit applies batch atomically under the protocol of [domain.Batch]:
// advisory transaction locks on every key (ascending id), row locks in
// counter-key order, ledger locks in shard order for keys without a row,
// then one database clock sample, evaluation by the domain, and the writes
// and COMMIT only when the batch is allowed. It costs two network round
// trips, or one and a ROLLBACK when the batch is denied. A batch of one
// check takes the statements of [Store.AdmitCheck].
//
// A batch that is nil, was never prepared or was already driven is
// rejected first, before the store's state, the context or the pool are
// looked at. A denial is a decision, read from the batch; Admit then
// returns nil even if the rollback failed (the connection is closed instead
// of pooled). An error is a [*AdmissionError] (or a structural error matching
// [domain.ErrInvalidInput]) and always fails closed.
func (s *Store) Admit(ctx context.Context, batch *domain.Batch) error {
	if err := batch.Ready(); err != nil {
		return err
	}
	if n := batch.Len(); n > s.cfg.MaxBatchSize {
		return &domain.BatchError{Problem: domain.BatchTooLarge, Size: n, Max: s.cfg.MaxBatchSize}
	}
	a := s.admissions.Get().(*admission)
	if err := a.prepare(batch, s.cfg.RowsPerShard); err != nil {
		s.admissions.Put(a)
		return err
	}
	if s.closed.Load() {
		s.admissions.Put(a)
		return &AdmissionError{Op: OpAdmit, Err: ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		s.admissions.Put(a)
		return &AdmissionError{Op: OpAdmit, Err: err, Timeout: isTimeout(err)}
	}
	conn, err := s.acquire(ctx)
	if err != nil {
		s.admissions.Put(a)
		return interpretError(OpAcquire, err)
	}
	a.kind, a.batch = kindBatch, batch
	if batch.Len() == 1 {
		a.kind = kindBatchOfOne
		a.one.prepare(batch.Key(0))
	}
	_, err = s.drive(ctx, conn, a)
	return err
}

// drive runs admission a on conn for a caller whose context is ctx, and
// returns its decision (for a single check) and error. a goes back to the
// pool once done with, by the caller or, when the caller gave up, by the
// work.
func (s *Store) drive(ctx context.Context, conn *pgxpool.Conn, a *admission) (domain.Decision, error) {
	a.caller = ctx
	a.sess.open(ctx, conn, s.cfg.OperationTimeout)
	o := a.sess.drive(ctx, a.work)
	if o.detached {
		// a belongs to the work now.
		return domain.Decision{}, leftError(ctx, o)
	}
	d, err := a.decision, a.err
	if o.left && err != nil {
		// The work stopped because the caller left: the caller's error.
		err = leftError(ctx, o)
	}
	a.reset()
	s.admissions.Put(a)
	return d, err
}

// admissionKind says which protocol an admission drives.
type admissionKind uint8

const (
	kindCheck      admissionKind = iota // AdmitCheck: the single-check path
	kindBatchOfOne                      // Admit of one check: the single-check path
	kindBatch                           // Admit of two or more checks
)

// admission is one Admit or AdmitCheck: its session and scratch memory,
// reused through the store's pool. The per-check slices are in caller order.
type admission struct {
	store  *Store
	sess   session
	work   func() // a.run, bound once
	caller context.Context

	kind     admissionKind
	check    domain.Check  // kindCheck: the caller's check, copied
	batch    *domain.Batch // the caller's batch, touched only while the caller waits
	decision domain.Decision
	err      error

	keys     []byte   // the counter keys, 64 bytes each
	fps, sks [][]byte // fingerprint and subject key of each check, views into keys
	shards   []int16
	lockIDs  []int64 // sorted, de-duplicated
	present  []bool
	counters []domain.Counter
	ledger   []ledgerRow // rows of the locked ledger shards

	// The writes of round trip 2.
	upFps, upSks      [][]byte
	upUsed            []int64
	upStart, upExpire []domain.Instant
	inPolicy, inScope []string
	inFps, inSks      [][]byte
	inStart, inExpire []domain.Instant
	inUsed            []int64

	// Parameters in binary form: each ends at its offset in buf.
	buf    []byte
	ends   []int
	params [][]byte

	one single // a batch of one check takes the single-check path
}

func newAdmission(s *Store) *admission {
	a := &admission{store: s}
	a.work = a.run
	return a
}

// reset drops what a holds of its caller before a goes back to the pool.
func (a *admission) reset() {
	a.caller, a.batch, a.err = nil, nil, nil
	a.check, a.decision = domain.Check{}, domain.Decision{}
}

type ledgerRow struct {
	shard int16
	rows  int64
}

// run is the work of an admission, driven by its session: it readies the
// connection, runs the protocol and exits.
func (a *admission) run() {
	s := a.store
	st, err := s.ready(&a.sess, a.caller)
	if st == nil && err == nil {
		err = errCallerLeft
	}
	if st != nil {
		rows := s.cfg.RowsPerShard
		switch a.kind {
		case kindCheck:
			a.decision, err = a.one.admitCheck(&a.sess, st, &a.check, rows)
		case kindBatchOfOne:
			err = a.one.admitBatchOfOne(&a.sess, st, a.batch, rows)
		default:
			err = a.admitBatch(&a.sess, st, rows)
		}
	}
	a.err = err
	if a.sess.exit() {
		// The caller was answered without these results.
		a.reset()
		s.admissions.Put(a)
	}
}

// prepare copies the batch's keys into argument form and rejects a batch
// that puts more keys on one shard than the shard may ever hold.
func (a *admission) prepare(b *domain.Batch, rowsPerShard int) error {
	n := b.Len()
	a.keys = resize(a.keys, n*domain.CounterKeySize)
	a.fps, a.sks = resize(a.fps, n), resize(a.sks, n)
	a.shards = resize(a.shards, n)
	a.lockIDs = resize(a.lockIDs, n)
	a.present = resize(a.present, n)
	a.counters = resize(a.counters, n)
	for i := range n {
		k := b.Key(i)
		kb := k.Bytes()
		off := i * domain.CounterKeySize
		copy(a.keys[off:], kb[:])
		a.fps[i] = a.keys[off : off+32 : off+32]
		a.sks[i] = a.keys[off+32 : off+64 : off+64]
		a.shards[i] = int16(ShardOf(k))
		a.lockIDs[i] = AdvisoryLockID(k)
		a.present[i] = false
		a.counters[i] = domain.Counter{}
	}
	slices.Sort(a.lockIDs)
	a.lockIDs = slices.Compact(a.lockIDs)
	if n > rowsPerShard {
		var count [ShardCount]int
		for _, sh := range a.shards {
			count[sh]++
		}
		for sh, c := range count {
			if c > rowsPerShard {
				return &ShardOverflowError{Shard: sh, Count: c, Capacity: rowsPerShard}
			}
		}
	}
	return nil
}

// admitBatch drives a batch of two or more checks through the protocol.
// The batch is the caller's: it is touched only while the caller waits.
func (a *admission) admitBatch(ss *session, st *connState, rowsPerShard int) error {
	now, err := a.lockAndRead(ss, st)
	if err != nil {
		return err
	}
	if !ss.hold() {
		return errCallerLeft
	}
	commit, err := a.evaluate(now, rowsPerShard)
	ss.release()
	if err != nil || !commit {
		// A denial stands in the batch whatever becomes of the rollback.
		return err
	}
	return a.writeAndCommit(ss, st)
}

// evaluate hands what round trip 1 read to the batch and, when the batch is
// allowed, gathers the writes of round trip 2.
func (a *admission) evaluate(now domain.Instant, rowsPerShard int) (bool, error) {
	b := a.batch
	if err := a.observe(b, rowsPerShard); err != nil {
		return false, &AdmissionError{Op: OpLock, Err: err}
	}
	commit, err := b.Evaluate(now)
	if err != nil {
		return false, &AdmissionError{Op: OpEvaluate, Err: err}
	}
	if commit {
		a.gatherWrites(b)
	}
	return commit, nil
}

// lockAndRead is round trip 1. It returns the database time sampled after
// every lock was granted.
func (a *admission) lockAndRead(ss *session, st *connState) (domain.Instant, error) {
	a.args()
	a.buf = appendServerTimeout(a.buf, ss.wait)
	a.arg()
	a.buf = appendServerTimeout(a.buf, ss.budget)
	a.arg()
	a.buf = appendInt8Array(a.buf, a.lockIDs)
	a.arg()
	a.buf = appendByteaArray(a.buf, a.fps)
	a.arg()
	a.buf = appendByteaArray(a.buf, a.sks)
	a.arg()
	a.buf = appendInt2Array(a.buf, a.shards)
	a.arg()
	p := a.sliceArgs()
	var q pgconn.Batch
	q.ExecStatement(st.stmts[stmtBegin], nil, nil, nil)
	q.ExecStatement(st.stmts[stmtLockMany], p[:3], binaryFormat, nil)
	q.ExecStatement(st.stmts[stmtReadMany], p[3:6], binaryFormat, binaryFormat)
	if !ss.send(false) {
		return 0, errCallerLeft
	}
	mrr := ss.pc.ExecBatch(ss.ctx, &q)
	now, err := a.readResults(mrr)
	if cerr := mrr.Close(); cerr != nil {
		err = cerr
	}
	ss.received()
	if err != nil {
		ss.forget(err)
		return 0, interpretError(OpLock, err)
	}
	return now, nil
}

// Parts of sqlReadMany's answer.
const (
	partCounter = 0
	partLedger  = 1
	partClock   = 2
)

func (a *admission) readResults(mrr *pgconn.MultiResultReader) (domain.Instant, error) {
	for range 2 { // BEGIN, settings and advisory locks
		if !mrr.NextResult() {
			return 0, errIncomplete
		}
		if _, err := mrr.ResultReader().Close(); err != nil {
			return 0, err
		}
	}
	if !mrr.NextResult() {
		return 0, errIncomplete
	}
	rr := mrr.ResultReader()
	a.ledger = a.ledger[:0]
	var (
		now     domain.Instant
		sampled bool
		bad     error
	)
	for rr.NextRow() {
		// The values live in the connection's read buffer until the next
		// message; they are decoded before that.
		if err := a.decodeRow(rr.Values(), &now, &sampled); err != nil && bad == nil {
			bad = err
		}
	}
	if _, err := rr.Close(); err != nil {
		return 0, err
	}
	if bad != nil {
		return 0, bad
	}
	if !sampled {
		return 0, malformed("the read returned no clock sample")
	}
	return now, nil
}

// decodeRow decodes one row of sqlReadMany: part, i, used, started and
// expires, in binary format.
func (a *admission) decodeRow(v [][]byte, now *domain.Instant, sampled *bool) error {
	if len(v) != 5 {
		return malformed("the read returned a malformed row")
	}
	part, ok1 := decodeInt2(v[0])
	i, ok2 := decodeInt8(v[1])
	if !ok1 || !ok2 {
		return malformed("the read returned a malformed row")
	}
	switch part {
	case partCounter:
		used, ok1 := decodeInt8(v[2])
		start, ok2 := decodeTime(v[3])
		expires, ok3 := decodeTime(v[4])
		if i < 1 || int(i) > len(a.present) {
			return malformed("the row lock returned a check out of range")
		}
		a.present[i-1] = true
		if !ok1 || !ok2 || !ok3 {
			// A counter the domain rejects as corrupt: the admission fails
			// closed.
			a.counters[i-1] = domain.Counter{Used: -1}
			return nil
		}
		a.counters[i-1] = domain.Counter{Used: used, Start: start, Expires: expires}
	case partLedger:
		rows, ok := decodeInt8(v[2])
		if !ok {
			return ErrLedger
		}
		a.ledger = append(a.ledger, ledgerRow{shard: int16(i), rows: rows})
	case partClock:
		*now, *sampled = decodeTime(v[3])
	}
	return nil
}

// observe reports what round trip 1 read. A key without a row finds its
// shard full when the ledger's count, plus the new keys of this batch ahead
// of it in caller order on the same shard, reaches rowsPerShard.
func (a *admission) observe(b *domain.Batch, rowsPerShard int) error {
	for i := range a.present {
		if a.present[i] {
			b.Observe(i, domain.Observation{Counter: a.counters[i]})
			continue
		}
		rows, ok := a.ledgerRows(a.shards[i])
		if !ok {
			return ErrLedger
		}
		for j := range i {
			if !a.present[j] && a.shards[j] == a.shards[i] {
				rows++
			}
		}
		// The earliest expiry of a full shard is left unknown: finding it
		// would scan the table, as no index orders rows by shard.
		b.Observe(i, domain.Observation{Full: rows >= int64(rowsPerShard)})
	}
	return nil
}

func (a *admission) ledgerRows(shard int16) (int64, bool) {
	for _, r := range a.ledger {
		if r.shard == shard {
			return r.rows, true
		}
	}
	return 0, false
}

// gatherWrites copies the new state of every counter of an allowed batch
// into the arguments of round trip 2.
func (a *admission) gatherWrites(b *domain.Batch) {
	a.upFps, a.upSks, a.upUsed = a.upFps[:0], a.upSks[:0], a.upUsed[:0]
	a.upStart, a.upExpire = a.upStart[:0], a.upExpire[:0]
	a.inPolicy, a.inScope, a.inFps, a.inSks = a.inPolicy[:0], a.inScope[:0], a.inFps[:0], a.inSks[:0]
	a.inStart, a.inExpire, a.inUsed = a.inStart[:0], a.inExpire[:0], a.inUsed[:0]
	for i := range a.present {
		next := b.Next(i)
		if a.present[i] {
			a.upFps, a.upSks = append(a.upFps, a.fps[i]), append(a.upSks, a.sks[i])
			a.upUsed = append(a.upUsed, next.Used)
			a.upStart, a.upExpire = append(a.upStart, next.Start), append(a.upExpire, next.Expires)
			continue
		}
		p := b.Check(i).Policy()
		a.inPolicy, a.inScope = append(a.inPolicy, p.ID().String()), append(a.inScope, p.Scope().String())
		a.inFps, a.inSks = append(a.inFps, a.fps[i]), append(a.inSks, a.sks[i])
		a.inStart, a.inExpire = append(a.inStart, next.Start), append(a.inExpire, next.Expires)
		a.inUsed = append(a.inUsed, next.Used)
	}
}

// writeAndCommit is round trip 2 of an allowed batch.
func (a *admission) writeAndCommit(ss *session, st *connState) error {
	a.args()
	var q pgconn.Batch
	writes := 0
	if len(a.upFps) > 0 {
		a.buf = appendByteaArray(a.buf, a.upFps)
		a.arg()
		a.buf = appendByteaArray(a.buf, a.upSks)
		a.arg()
		a.buf = appendInt8Array(a.buf, a.upUsed)
		a.arg()
		a.buf = appendTimeArray(a.buf, a.upStart)
		a.arg()
		a.buf = appendTimeArray(a.buf, a.upExpire)
		a.arg()
	}
	if len(a.inFps) > 0 {
		a.buf = appendTextArray(a.buf, a.inPolicy)
		a.arg()
		a.buf = appendTextArray(a.buf, a.inScope)
		a.arg()
		a.buf = appendByteaArray(a.buf, a.inFps)
		a.arg()
		a.buf = appendByteaArray(a.buf, a.inSks)
		a.arg()
		a.buf = appendTimeArray(a.buf, a.inStart)
		a.arg()
		a.buf = appendTimeArray(a.buf, a.inExpire)
		a.arg()
		a.buf = appendInt8Array(a.buf, a.inUsed)
		a.arg()
	}
	p := a.sliceArgs()
	if len(a.upFps) > 0 {
		q.ExecStatement(st.stmts[stmtUpdateMany], p[:5], binaryFormat, nil)
		p = p[5:]
		writes++
	}
	if len(a.inFps) > 0 {
		q.ExecStatement(st.stmts[stmtInsertMany], p[:7], binaryFormat, nil)
		writes++
	}
	q.ExecStatement(st.stmts[stmtCommit], nil, nil, nil)
	if !ss.send(true) {
		return errCallerLeft
	}
	mrr := ss.pc.ExecBatch(ss.ctx, &q)
	op, err := readWritten(mrr, writes)
	// When every result, COMMIT's included, has arrived, the batch is
	// committed even if closing the reader fails; the session then closes
	// the connection rather than pooling it.
	_ = mrr.Close()
	ss.received()
	if err != nil {
		ss.forget(err)
		return interpretError(op, err)
	}
	return nil
}

// args starts a new list of binary arguments in buf; arg ends each one.
func (a *admission) args() { a.buf, a.ends = a.buf[:0], a.ends[:0] }

func (a *admission) arg() { a.ends = append(a.ends, len(a.buf)) }

// sliceArgs returns the arguments gathered since args, as views into buf.
func (a *admission) sliceArgs() [][]byte {
	a.params = a.params[:0]
	start := 0
	for _, end := range a.ends {
		a.params = append(a.params, a.buf[start:end:end])
		start = end
	}
	return a.params
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
