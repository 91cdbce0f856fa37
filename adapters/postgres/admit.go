package postgres

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// Admit applies batch atomically under the protocol of [domain.Batch]:
// advisory transaction locks on every key (ascending id), row locks in
// counter-key order, ledger locks in shard order for keys without a row,
// then one database clock sample, evaluation by the domain, and the writes
// and COMMIT only when the batch is allowed. It costs two network round
// trips, or one and a ROLLBACK when the batch is denied.
//
// A batch that is nil, was never prepared or was already driven is
// rejected first, before the store's state, the context or the pool are
// looked at. A denial is a decision, read from the batch; Admit then
// returns nil even if the rollback failed (the connection is closed instead
// of pooled). An error is an [*AdmissionError] (or a structural error
// matching [domain.ErrInvalidInput]) and always fails closed. A nil ctx
// is an AdmissionError matching [ports.ErrNilContext] (and so
// domain.ErrInvalidInput), found before the store's state is looked at.
func (s *Store) Admit(ctx context.Context, batch *domain.Batch) error {
	if err := batch.Ready(); err != nil {
		return err
	}
	if s.state() == nil {
		return unbuiltAdmission(ctx)
	}
	a := s.state().admissions.Get().(*admission)
	kept, err := s.admit(ctx, a, batch)
	if kept {
		s.put(a)
	}
	return err
}

// AdmitCheck applies a single check exactly as [Store.Admit] applies a
// batch holding only check, through the same flow: the check becomes a
// batch of one ([domain.Batch.ResetSingle]) held in the admission's pooled
// memory, so it costs no batch of the caller's. It is the path
// [github.com/runlimit/runlimit/app.Limiter.Check] takes. A denial is a
// decision; errors are those of Admit, and an invalid check is rejected
// with its own error before anything else, a closed store or a done
// context included.
func (s *Store) AdmitCheck(ctx context.Context, check domain.Check) (domain.Decision, error) {
	if s.state() == nil {
		if err := domain.ValidateCheck(&check); err != nil {
			return domain.Decision{}, err
		}
		return domain.Decision{}, unbuiltAdmission(ctx)
	}
	a := s.state().admissions.Get().(*admission)
	b := &a.single
	if err := b.ResetSingle(&check); err != nil {
		s.put(a)
		return domain.Decision{}, err
	}
	kept, err := s.admit(ctx, a, b)
	var d domain.Decision
	if err == nil {
		d, _, err = b.DecisionOf(0)
	}
	if kept {
		s.put(a)
	}
	return d, err
}

// admit is the one admission flow of Admit and AdmitCheck: it runs a for
// b, a ready batch, from the checks that need no connection to the answer.
// kept reports whether the caller still owns a; it does not when the caller
// left and the work, still running, will give a back itself.
func (s *Store) admit(ctx context.Context, a *admission, b *domain.Batch) (kept bool, err error) {
	if n := b.Len(); n > s.cfg.MaxBatchSize {
		return true, &domain.BatchError{Problem: domain.BatchTooLarge, Size: n, Max: s.cfg.MaxBatchSize}
	}
	if err := a.prepare(b, s.cfg.RowsPerShard); err != nil {
		return true, err
	}
	if ctx == nil {
		return true, &AdmissionError{Op: OpAdmit, Err: ports.ErrNilContext}
	}
	bg := &s.state().bg
	if s.state().closed.Load() || !bg.enter() {
		return true, &AdmissionError{Op: OpAdmit, Err: ErrClosed}
	}
	defer bg.done()
	if err := ctx.Err(); err != nil {
		return true, &AdmissionError{Op: OpAdmit, Err: err, Timeout: isTimeout(err)}
	}
	conn, err := s.acquire(ctx)
	if err != nil {
		return true, interpretError(OpAcquire, stageOpen, err)
	}
	a.batch, a.caller = b, ctx
	a.sess.open(ctx, conn, s.cfg.OperationTimeout, bg)
	if s.stateOf(a.sess.pc) == nil {
		// A cold connection warms up first: a caller who leaves before
		// the work has begun leaves at that step, as one who leaves
		// during the warm-up does, not at the lock that was never sent.
		a.sess.step = OpAcquire
	}
	o := a.sess.drive(ctx, a.work)
	if o.detached {
		// a belongs to the work now.
		return false, leftError(ctx, o)
	}
	err = a.err
	if o.left && err != nil {
		// The work stopped because the caller left: the caller's error.
		// The work has finished, so when its own error proves that nothing
		// was committed (the server rejected a statement before COMMIT
		// ran: a write cancelled while it waited for a lock), that stands.
		le := leftError(ctx, o)
		if ae, ok := err.(*AdmissionError); ok && le.MayHaveConsumed && !ae.MayHaveConsumed {
			le.Op, le.MayHaveConsumed = ae.Op, false
		}
		err = le
	}
	return true, a.sess.blame(err)
}

// put gives a back to the store's pool, without what it holds of its
// caller.
func (s *Store) put(a *admission) {
	a.caller, a.batch, a.err = nil, nil, nil
	s.state().admissions.Put(a)
}

// admission is one Admit or AdmitCheck: its session and scratch memory,
// reused through the store's pool. The per-check slices are in caller
// order.
type admission struct {
	store  *Store
	sess   session
	work   func() // a.run, bound once
	caller context.Context

	// batch is the batch being admitted, the caller's or single; it is
	// touched only while the caller waits.
	batch *domain.Batch
	// single is AdmitCheck's batch of one.
	single domain.Batch
	err    error

	keys     []byte   // the counter keys, 64 bytes each
	fps, sks [][]byte // fingerprint and subject key of each check, views into keys
	shards   []int16
	lockIDs  []int64 // sorted, de-duplicated
	present  []bool
	counters []domain.Counter
	ledger   []ledgerRow // rows of the locked ledger shards

	// The writes of round trip 2: counters that have a row, and new ones.
	updates, inserts writes

	params params
}

func newAdmission(s *Store) *admission {
	a := &admission{store: s}
	a.work = a.run
	return a
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
		err = a.protocol(&a.sess, st, s.cfg.RowsPerShard)
	}
	a.err = err
	if a.sess.exit() {
		// The caller was answered without these results.
		s.put(a)
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

// one reports whether the batch holds a single check, which round trips 1
// and 2 send as scalar statements (see statements.go): the same steps in
// the same order, at a fraction of the server's work on arrays.
func (a *admission) one() bool { return len(a.present) == 1 }

// protocol is the admission protocol, written once for every batch size:
// round trip 1 (locks, reads, clock), evaluation by the domain, and round
// trip 2 (writes and COMMIT) only when the batch is allowed. The batch is
// the caller's: it is touched only while the caller waits.
//
// A single check under [Optimistic] tries that protocol first; after
// optimisticAttempts conflicts it goes on here, with the same batch, which
// no attempt has touched.
func (a *admission) protocol(ss *session, st *connState, rowsPerShard int) error {
	if a.one() && a.store.cfg.Protocol == Optimistic {
		for range optimisticAttempts {
			if done, err := a.optimistic(ss, st, rowsPerShard); done {
				return err
			}
		}
	}
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
		// A denial stands in the batch whatever becomes of the rollback,
		// which the session runs, or the connection's closing.
		return err
	}
	return a.writeAndCommit(ss, st)
}

// lockAndRead is round trip 1. It returns the database time sampled after
// every lock was granted.
func (a *admission) lockAndRead(ss *session, st *connState) (domain.Instant, error) {
	p := &a.params
	p.reset()
	var q pgconn.Batch
	q.ExecStatement(st.stmts[stmtBegin], nil, nil, nil)
	scalar := a.one()
	lock, read := stmtLockMany, stmtReadMany
	if scalar {
		lock, read = stmtLockOne, stmtReadOne
	}
	ss.addTimeouts(p)
	p.addInt8(a.lockIDs, scalar)
	p.addBytea(a.fps, scalar)
	p.addBytea(a.sks, scalar)
	p.addInt2(a.shards, scalar)
	args := p.slice()
	q.ExecStatement(st.stmts[lock], args[:3], binaryFormat, nil)
	q.ExecStatement(st.stmts[read], args[3:], binaryFormat, binaryFormat)
	if !ss.send(false) {
		return 0, errCallerLeft
	}
	mrr := ss.pc.ExecBatch(ss.ctx, &q)
	now, err := a.readLocked(mrr)
	// The reader's own error, when it has one, is the cause: a result that
	// ended early did so because of it.
	if cerr := mrr.Close(); cerr != nil {
		err = cerr
	}
	ss.received()
	if err != nil {
		ss.forget(err)
		return 0, interpretError(OpLock, stageOpen, err)
	}
	return now, nil
}

// readLocked reads round trip 1's answer: the results of BEGIN and of the
// settings and advisory locks, then the rows that report stored counters,
// ledger rows and the clock sample.
func (a *admission) readLocked(mrr *pgconn.MultiResultReader) (domain.Instant, error) {
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
		rows    int
		bad     error
	)
	for rr.NextRow() {
		rows++
		// The values live in the connection's read buffer until the next
		// message; they are decoded before that.
		var err error
		if a.one() {
			err = a.decodeReadOne(rr.Values(), &now, &sampled)
		} else {
			err = a.decodeRow(rr.Values(), &now, &sampled)
		}
		if err != nil && bad == nil {
			bad = err
		}
	}
	if _, err := rr.Close(); err != nil {
		return 0, err
	}
	switch {
	case bad != nil:
		return 0, bad
	case a.one() && rows != 1:
		return 0, malformed("the read returned no single row")
	case !sampled:
		return 0, malformed("the read returned no clock sample")
	}
	return now, nil
}

// decodeReadOne decodes sqlReadOne's row, in binary format: used,
// started_at, expires_at (NULL when the key has no row), shard_rows (NULL
// when it has one) and the clock sample.
func (a *admission) decodeReadOne(v [][]byte, now *domain.Instant, sampled *bool) error {
	if len(v) != 5 {
		return malformed("the read returned a malformed row")
	}
	return a.decodeOne(v, now, sampled)
}

// decodeOne decodes what a single check's round trip 1 reads, in either
// protocol: used, started_at, expires_at (NULL when the key has no row),
// the shard's row count (NULL when it has one) and the clock sample.
func (a *admission) decodeOne(f [][]byte, now *domain.Instant, sampled *bool) error {
	if *now, *sampled = decodeTime(f[4]); !*sampled {
		return malformed("the read returned no clock sample")
	}
	if f[0] != nil {
		a.observeCounter(0, f[0], f[1], f[2])
		return nil
	}
	rows, ok := decodeLedgerCount(f[3])
	if !ok {
		return ErrLedger
	}
	a.ledger = append(a.ledger, ledgerRow{shard: a.shards[0], rows: rows})
	return nil
}

// Parts of sqlReadMany's answer.
const (
	partCounter = 0
	partLedger  = 1
	partClock   = 2
)

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
		if i < 1 || int(i) > len(a.present) {
			return malformed("the row lock returned a check out of range")
		}
		a.observeCounter(int(i-1), v[2], v[3], v[4])
	case partLedger:
		rows, ok := decodeLedgerCount(v[2])
		if !ok {
			return ErrLedger
		}
		a.ledger = append(a.ledger, ledgerRow{shard: int16(i), rows: rows})
	case partClock:
		*now, *sampled = decodeTime(v[3])
	}
	return nil
}

// observeCounter records the stored counter of check i. One that cannot be
// decoded is recorded as a counter the domain rejects as corrupt, so that
// the admission fails closed. So is a row whose usage is not positive,
// which the table's constraints forbid: the domain reads a zero counter at
// the Unix epoch as no counter at all, and would start a new window over
// a row whose state is unknown.
func (a *admission) observeCounter(i int, used, started, expires []byte) {
	a.present[i] = true
	u, ok1 := decodeInt8(used)
	start, ok2 := decodeTime(started)
	end, ok3 := decodeTime(expires)
	if !ok1 || !ok2 || !ok3 || u < 1 {
		a.counters[i] = domain.Counter{Used: -1}
		return
	}
	a.counters[i] = domain.Counter{Used: u, Start: start, Expires: end}
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

// writes are the new states of counters, column by column, as round trip
// 2 sends them: policy and scope are set for inserts only.
type writes struct {
	fps, sks       [][]byte
	used           []int64
	start, expires []domain.Instant
	policy, scope  []string
}

func (w *writes) reset() {
	w.fps, w.sks, w.used = w.fps[:0], w.sks[:0], w.used[:0]
	w.start, w.expires = w.start[:0], w.expires[:0]
	w.policy, w.scope = w.policy[:0], w.scope[:0]
}

func (w *writes) add(fp, sk []byte, next domain.Counter) {
	w.fps, w.sks, w.used = append(w.fps, fp), append(w.sks, sk), append(w.used, next.Used)
	w.start, w.expires = append(w.start, next.Start), append(w.expires, next.Expires)
}

// addParams adds the columns every write sets, in the order of the write
// statements' parameters, and the ids when the writes are inserts.
func (w *writes) addParams(p *params, scalar bool) {
	p.addBytea(w.fps, scalar)
	p.addBytea(w.sks, scalar)
	p.addInt8(w.used, scalar)
	p.addTime(w.start, scalar)
	p.addTime(w.expires, scalar)
	if len(w.policy) > 0 {
		p.addText(w.policy, scalar)
		p.addText(w.scope, scalar)
	}
}

// gatherWrites copies the new state of every counter of an allowed batch
// into the writes of round trip 2.
func (a *admission) gatherWrites(b *domain.Batch) {
	a.updates.reset()
	a.inserts.reset()
	for i := range a.present {
		if a.present[i] {
			a.updates.add(a.fps[i], a.sks[i], b.Next(i))
			continue
		}
		a.inserts.add(a.fps[i], a.sks[i], b.Next(i))
		p := b.Check(i).Policy()
		a.inserts.policy = append(a.inserts.policy, p.ID().String())
		a.inserts.scope = append(a.inserts.scope, p.Scope().String())
	}
}

// writeAndCommit is round trip 2 of an allowed batch: the updates of the
// counters that have a row, the inserts of those that had none, and COMMIT.
func (a *admission) writeAndCommit(ss *session, st *connState) error {
	p := &a.params
	var q pgconn.Batch
	one := a.one()
	update, insert := stmtUpdateMany, stmtInsertMany
	if one {
		update, insert = stmtUpdateOne, stmtInsertOne
	}
	statements := 0
	for _, w := range [...]struct {
		rows *writes
		stmt int
	}{{&a.updates, update}, {&a.inserts, insert}} {
		if len(w.rows.fps) == 0 {
			continue
		}
		// The statement is encoded at once: params can start again.
		p.reset()
		w.rows.addParams(p, one)
		q.ExecStatement(st.stmts[w.stmt], p.slice(), binaryFormat, nil)
		statements++
	}
	q.ExecStatement(st.stmts[stmtCommit], nil, nil, nil)
	if !ss.send(true) {
		return errCallerLeft
	}
	mrr := ss.pc.ExecBatch(ss.ctx, &q)
	stage, err := readWritten(mrr, statements)
	// When every result, COMMIT's included, has arrived, the batch is
	// committed even if closing the reader fails; the session then closes
	// the connection rather than pooling it.
	_ = mrr.Close()
	ss.received()
	if err != nil {
		ss.forget(err)
		return interpretError(OpCommit, stage, err)
	}
	return nil
}

// readWritten reads the results of writes write statements and COMMIT's,
// and says at which stage an error was met: before COMMIT's result (a
// write's error, or a round trip that broke before it), or at COMMIT's.
// COMMIT of a transaction that had failed answers ROLLBACK instead of an
// error.
func readWritten(mrr *pgconn.MultiResultReader, writes int) (stage, error) {
	for range writes {
		if !mrr.NextResult() {
			return stageBeforeCommit, incomplete(mrr.Close())
		}
		if _, err := mrr.ResultReader().Close(); err != nil {
			return stageBeforeCommit, err
		}
	}
	if !mrr.NextResult() {
		return stageCommit, incomplete(mrr.Close())
	}
	tag, err := mrr.ResultReader().Close()
	if err != nil {
		return stageCommit, err
	}
	if tag.String() != "COMMIT" {
		return stageCommit, ErrCommitOutcome
	}
	return stageCommit, nil
}

// incomplete is the error of an answer that ended early: the reader's own,
// or errIncomplete when it has none.
func incomplete(err error) error {
	if err == nil {
		return errIncomplete
	}
	return err
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// unbuiltAdmission is the error of an admission on a nil or zero Store,
// once its input is known to be valid: a nil context, or else the store
// is as good as closed.
func unbuiltAdmission(ctx context.Context) error {
	if ctx == nil {
		return &AdmissionError{Op: OpAdmit, Err: ports.ErrNilContext}
	}
	return &AdmissionError{Op: OpAdmit, Err: ErrClosed}
}
