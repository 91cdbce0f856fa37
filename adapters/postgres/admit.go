package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/domain"
)

// The admission protocol for a batch of two or more checks (a batch of one
// takes the single-check path of single.go). Round trip 1 sends, pipelined:
//
//	BEGIN; settings and advisory locks; row locks, ledger locks and the
//	clock sample
//
// and round trip 2 sends the writes and COMMIT, or ROLLBACK when the batch
// is denied. Every statement works on arrays, so the number of statements
// does not grow with the batch, and each costs the server about as much as
// the next: round trip 1 is as few statements as the lock order allows.
// Names of functions are schema-qualified so that no search_path can
// substitute them; the clock above all.
const (
	// sqlLock applies the transaction's settings, then serialises every
	// admission of the batch's keys, including the ones that find a key
	// absent and would create it: row locks cannot do that, there is no row
	// yet.
	//
	// The settings are an uncorrelated subquery, which PostgreSQL runs once
	// as a one-time filter before the scan, so they hold before the first
	// lock is requested: lock_timeout bounds these waits, and the timeouts
	// and generic plans hold for every later statement. Ids arrive sorted
	// and de-duplicated; the ORDER BY keeps the locking order ascending
	// whatever the client sends (a volatile select list is evaluated after
	// the sort).
	//
	// Generic plans: pgx prepares each statement once per connection, but
	// PostgreSQL would otherwise re-plan the array statements on every
	// execution, because a generic plan's guess of 10 elements per array
	// looks costlier than a custom plan for the array at hand, although both
	// are the same nested loop over the primary key. Planning was most of
	// the cost of round trip 1. A generic plan cannot know how many shards
	// the ledger lookup wants either, and would scan all 256 ledger rows
	// rather than probe their primary key; sequential scans are off for the
	// transaction (every statement of it has an index to use).
	sqlLock = `SELECT pg_catalog.pg_advisory_xact_lock(l.id)
FROM pg_catalog.unnest($2::bigint[]) AS l(id)
` + sqlSettings + `
ORDER BY l.id`

	// sqlSettings is the one-time filter of sqlLock.
	sqlSettings = `WHERE (SELECT pg_catalog.set_config('statement_timeout', $1, true) IS NOT NULL
          AND pg_catalog.set_config('lock_timeout', $1, true) IS NOT NULL
          AND pg_catalog.set_config('idle_in_transaction_session_timeout', $1, true) IS NOT NULL
          AND pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true) IS NOT NULL
          AND pg_catalog.set_config('enable_seqscan', 'off', true) IS NOT NULL)`

	// sqlRead takes the remaining locks and the clock sample in one
	// statement, in the protocol's order. It runs after the advisory locks,
	// in a statement of its own: under read committed its snapshot is taken
	// only now, so it sees every row committed by the admissions it waited
	// for.
	//
	// PostgreSQL runs the branches of a UNION ALL one after the other, and
	// runs a materialised CTE when a branch first reads it:
	//
	//  1. locked: the batch's stored counters, read and locked in ascending
	//     counter-key order (the sort runs below the row locking). A row
	//     updated while we waited is re-read in its latest version.
	//  2. ledger: the capacity-ledger rows of the shards that would receive
	//     a new row (keys absent from locked), locked in ascending shard
	//     order. Keys with a row need no slot, and their admissions must not
	//     queue on a ledger row shared with thousands of other counters.
	//  3. the one clock sample, taken once every lock is held: a check that
	//     waited for a lock is judged at the time it got it, never at the
	//     time it asked.
	//
	// Rows come back tagged by part: 0 (i = check index from 1), 1 (i =
	// shard, used = rows in the shard) and 2 (started = the clock).
	sqlRead = `WITH locked AS MATERIALIZED (
    SELECT k.i, w.used, w.window_started_at, w.window_expires_at
    FROM ROWS FROM (pg_catalog.unnest($1::bytea[]), pg_catalog.unnest($2::bytea[]))
         WITH ORDINALITY AS k(fp, sk, i)
    JOIN runlimit_fixed_windows AS w
      ON w.config_fingerprint = k.fp AND w.subject_key = k.sk
    ORDER BY w.config_fingerprint, w.subject_key
    FOR UPDATE OF w),
ledger AS MATERIALIZED (
    SELECT c.shard, c.rows
    FROM runlimit_capacity_shards AS c
    WHERE c.shard = ANY (ARRAY(
        SELECT n.shard
        FROM pg_catalog.unnest($3::smallint[]) WITH ORDINALITY AS n(shard, i)
        WHERE NOT EXISTS (SELECT FROM locked WHERE locked.i = n.i)))
    ORDER BY c.shard
    FOR UPDATE OF c)
SELECT 0::smallint, i, used, window_started_at, window_expires_at FROM locked
UNION ALL
SELECT 1::smallint, shard::bigint, rows, NULL::timestamptz, NULL::timestamptz FROM ledger
UNION ALL
SELECT 2::smallint, 0::bigint, 0::bigint, pg_catalog.clock_timestamp(), NULL::timestamptz`

	// sqlUpdate writes the counters that have a row. Their rows are locked,
	// so every one of them is still there.
	sqlUpdate = `UPDATE runlimit_fixed_windows AS w
SET used = n.used, window_started_at = n.started, window_expires_at = n.expires
FROM ROWS FROM (pg_catalog.unnest($1::bytea[]), pg_catalog.unnest($2::bytea[]),
                pg_catalog.unnest($3::bigint[]), pg_catalog.unnest($4::timestamptz[]),
                pg_catalog.unnest($5::timestamptz[])) AS n(fp, sk, used, started, expires)
WHERE w.config_fingerprint = n.fp AND w.subject_key = n.sk`

	// sqlInsert creates the counters that had no row. The advisory locks
	// keep anyone else from creating them meanwhile; the ledger trigger
	// counts them against their shards, whose ledger rows are already
	// locked.
	sqlInsert = `INSERT INTO runlimit_fixed_windows
    (policy_id, scope_id, config_fingerprint, subject_key, window_started_at, window_expires_at, used)
SELECT * FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::text[]),
                         pg_catalog.unnest($3::bytea[]), pg_catalog.unnest($4::bytea[]),
                         pg_catalog.unnest($5::timestamptz[]), pg_catalog.unnest($6::timestamptz[]),
                         pg_catalog.unnest($7::bigint[]))`
)

// Admit applies batch atomically under the protocol of [domain.Batch]:
// advisory transaction locks on every key (ascending id), row locks in
// counter-key order, ledger locks in shard order for keys without a row,
// then one database clock sample, evaluation by the domain, and the writes
// and COMMIT only when the batch is allowed. It costs two network round
// trips, or one and a ROLLBACK when the batch is denied. A batch of one
// check takes the statements of [Store.AdmitCheck].
//
// A denial is a decision, read from the batch; Admit then returns nil even
// if the rollback failed (the connection is closed instead of pooled). An
// error is a [*CheckError] (or a structural error matching
// [domain.ErrInvalidInput]) and always fails closed.
func (s *Store) Admit(ctx context.Context, batch *domain.Batch) error {
	if s.closed.Load() {
		return &CheckError{Op: OpAdmit, Err: ErrClosed}
	}
	if n := batch.Len(); n > s.cfg.MaxBatchSize {
		return &domain.BatchError{Problem: domain.BatchTooLarge, Size: n, Max: s.cfg.MaxBatchSize}
	}
	a := s.admissions.Get().(*admission)
	defer s.admissions.Put(a)
	if err := a.prepare(batch, s.cfg.RowsPerShard); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &CheckError{Op: OpAdmit, Err: err, Timeout: isTimeout(err)}
	}
	conn, opCtx, cancel, err := s.acquire(ctx)
	if err != nil {
		return interpretError(OpAcquire, err)
	}
	defer cancel()
	if batch.Len() == 1 {
		err = a.one.admitBatchOfOne(opCtx, conn, batch, s.cfg.RowsPerShard)
	} else {
		err = a.run(opCtx, conn, batch, s.cfg.RowsPerShard)
	}
	finish(opCtx, conn)
	return err
}

// admission is the scratch memory of one Admit, reused through a pool. The
// per-check slices are in caller order.
type admission struct {
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
	upStart, upExpire []time.Time
	inPolicy, inScope []string
	inFps, inSks      [][]byte
	inStart, inExpire []time.Time
	inUsed            []int64

	read, write pgx.Batch

	one single // a batch of one check takes the single-check path
}

type ledgerRow struct {
	shard int16
	rows  int64
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

// run drives the batch through the protocol on conn. The caller ends the
// transaction with finish.
func (a *admission) run(ctx context.Context, conn *pgxpool.Conn, b *domain.Batch, rowsPerShard int) error {
	now, err := a.lockAndRead(ctx, conn)
	if err != nil {
		return interpretError(OpLock, err)
	}
	if err := a.observe(b, rowsPerShard); err != nil {
		return &CheckError{Op: OpLock, Err: err}
	}
	commit, err := b.Evaluate(now)
	if err != nil {
		return &CheckError{Op: OpEvaluate, Err: err}
	}
	if !commit {
		// The decision stands in the batch whatever becomes of the
		// rollback: finish rolls back, or closes the connection.
		return nil
	}
	op, err := a.writeAndCommit(ctx, conn, b)
	if err != nil {
		return interpretError(op, err)
	}
	return nil
}

// lockAndRead is round trip 1. It returns the database time sampled after
// every lock was granted.
func (a *admission) lockAndRead(ctx context.Context, conn *pgxpool.Conn) (domain.Instant, error) {
	q := &a.read
	q.QueuedQueries = q.QueuedQueries[:0]
	q.Queue(sqlBegin)
	q.Queue(sqlLock, serverTimeout(ctx), a.lockIDs)
	q.Queue(sqlRead, a.fps, a.sks, a.shards)
	br := conn.SendBatch(ctx, q)
	now, err := a.readResults(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return now, err
}

// Parts of sqlRead's answer.
const (
	partCounter = 0
	partLedger  = 1
	partClock   = 2
)

func (a *admission) readResults(br pgx.BatchResults) (domain.Instant, error) {
	for range 2 { // BEGIN, settings and advisory locks
		if _, err := br.Exec(); err != nil {
			return 0, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	a.ledger = a.ledger[:0]
	var (
		now     domain.Instant
		sampled bool
		part    int16
		i, used int64
		start   pgtype.Timestamptz
		expires pgtype.Timestamptz
	)
	for rows.Next() {
		if err := rows.Scan(&part, &i, &used, &start, &expires); err != nil {
			return 0, err
		}
		switch part {
		case partCounter:
			if i < 1 || int(i) > len(a.present) || !start.Valid || !expires.Valid {
				return 0, fmt.Errorf("runlimit: row lock returned check %d of %d", i, len(a.present))
			}
			a.present[i-1] = true
			a.counters[i-1] = domain.Counter{
				Used:    used,
				Start:   domain.InstantFromTime(start.Time),
				Expires: domain.InstantFromTime(expires.Time),
			}
		case partLedger:
			a.ledger = append(a.ledger, ledgerRow{shard: int16(i), rows: used})
		case partClock:
			now, sampled = domain.InstantFromTime(start.Time), start.Valid
		}
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if !sampled {
		return 0, errors.New("runlimit: the read returned no clock sample")
	}
	return now, nil
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

// writeAndCommit is round trip 2 of an allowed batch. On failure it returns
// the step the error belongs to.
func (a *admission) writeAndCommit(ctx context.Context, conn *pgxpool.Conn, b *domain.Batch) (string, error) {
	a.upFps, a.upSks, a.upUsed = a.upFps[:0], a.upSks[:0], a.upUsed[:0]
	a.upStart, a.upExpire = a.upStart[:0], a.upExpire[:0]
	a.inPolicy, a.inScope, a.inFps, a.inSks = a.inPolicy[:0], a.inScope[:0], a.inFps[:0], a.inSks[:0]
	a.inStart, a.inExpire, a.inUsed = a.inStart[:0], a.inExpire[:0], a.inUsed[:0]
	for i := range a.present {
		next := b.Next(i)
		if a.present[i] {
			a.upFps, a.upSks = append(a.upFps, a.fps[i]), append(a.upSks, a.sks[i])
			a.upUsed = append(a.upUsed, next.Used)
			a.upStart, a.upExpire = append(a.upStart, next.Start.Time()), append(a.upExpire, next.Expires.Time())
			continue
		}
		p := b.Check(i).Policy()
		a.inPolicy, a.inScope = append(a.inPolicy, p.ID().String()), append(a.inScope, p.Scope().String())
		a.inFps, a.inSks = append(a.inFps, a.fps[i]), append(a.inSks, a.sks[i])
		a.inStart, a.inExpire = append(a.inStart, next.Start.Time()), append(a.inExpire, next.Expires.Time())
		a.inUsed = append(a.inUsed, next.Used)
	}

	q := &a.write
	q.QueuedQueries = q.QueuedQueries[:0]
	if len(a.upFps) > 0 {
		q.Queue(sqlUpdate, a.upFps, a.upSks, a.upUsed, a.upStart, a.upExpire)
	}
	if len(a.inFps) > 0 {
		q.Queue(sqlInsert, a.inPolicy, a.inScope, a.inFps, a.inSks, a.inStart, a.inExpire, a.inUsed)
	}
	q.Queue(sqlCommit)
	br := conn.SendBatch(ctx, q)
	op, err := writeResults(br, len(q.QueuedQueries)-1)
	// When every result, COMMIT's included, has arrived, the batch is
	// committed even if closing the results fails; finish then closes the
	// connection rather than pooling it.
	_ = br.Close()
	return op, err
}

// writeResults reads the writes' results and COMMIT's. An error is
// attributed to OpWrite only when the server reported it for a write
// statement, which proves COMMIT was skipped; any other failure of the round
// trip (a timeout, a broken connection) is the commit's. COMMIT of a
// transaction that had failed answers ROLLBACK instead of an error.
func writeResults(br pgx.BatchResults, writes int) (string, error) {
	for range writes {
		if _, err := br.Exec(); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) {
				return OpWrite, err
			}
			return OpCommit, err
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return OpCommit, err
	}
	if tag.String() != "COMMIT" {
		return OpCommit, ErrCommitOutcome
	}
	return OpCommit, nil
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
