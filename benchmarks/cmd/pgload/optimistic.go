package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

// optimistic is the stretch item of issue 14: the admission protocol made
// optimistic. It is a contender, not a store mode: it admits single checks
// only and reports every failure as an error.
//
// Round trip 1 reads without locks: one statement returns the key's
// counter, the capacity ledger's count for a key without a row, and
// pg_catalog.clock_timestamp(). The domain evaluates that observation.
// Round trip 2, for an allowed check only, sets the statement and lock
// timeouts from the budget and writes conditionally, in one implicit
// transaction that commits when the server reaches the pipeline's Sync:
//
//   - an UPDATE that applies only while used, start and expiry are still
//     the values read;
//   - for a key without a row, an INSERT ... ON CONFLICT DO NOTHING that
//     first locks the key's ledger row and applies only while the shard is
//     still below its bound. The ledger's insert trigger counts the row, as
//     it does for the store.
//
// A write that changed no row met a conflicting admission; the check starts
// again from round trip 1, at most maxAttempts times.
//
// Why this keeps the store's rules. Every write applies to exactly the
// state the evaluation saw, so admissions of one key form a chain in which
// each read follows the commit before it: nothing is lost or counted twice,
// and the clock sample, taken after the read's snapshot, never goes back
// for a key (it may trail the commit, so durations may overstate, never
// understate). A counter's (used, start, expiry) never returns to an earlier
// value: used grows within a window and a new window starts later. The
// capacity condition is evaluated on the locked, latest ledger row, so two
// new keys racing for a shard's last slot cannot both take it.
type optimistic struct {
	pool         *pgxpool.Pool
	checks       [][]domain.Check
	rowsPerShard int64
	timeout      time.Duration
	maxAttempts  int
	retries      atomic.Int64 // conflicts that started a check again
}

// The optimistic contender's SQL, in one place, against the tables of
// migrations/ in the search path's schema.
const (
	// sqlOptRead returns one row whether the key has a row or not. The
	// ledger is read only for a key without one.
	sqlOptRead = `SELECT w.used, w.window_started_at, w.window_expires_at,
       CASE WHEN w.used IS NULL THEN
           (SELECT c.row_count FROM runlimit_capacity_shards AS c WHERE c.capacity_shard = $3::smallint)
       END,
       pg_catalog.clock_timestamp()
FROM (SELECT) AS one
LEFT JOIN runlimit_fixed_windows AS w
    ON w.config_fingerprint = $1::bytea AND w.subject_key = $2::bytea`

	sqlOptTimeouts = `SELECT pg_catalog.set_config('statement_timeout', $1, true),
       pg_catalog.set_config('lock_timeout', $1, true)`

	sqlOptUpdate = `UPDATE runlimit_fixed_windows
SET used = $3::bigint, window_started_at = $4::timestamptz, window_expires_at = $5::timestamptz
WHERE config_fingerprint = $1::bytea AND subject_key = $2::bytea
  AND used = $6::bigint AND window_started_at = $7::timestamptz AND window_expires_at = $8::timestamptz`

	// sqlOptInsert locks the ledger row before inserting: FOR UPDATE waits
	// for a concurrent insert into the shard and then evaluates the bound
	// on the row it committed.
	sqlOptInsert = `WITH room AS (
    SELECT 1 FROM runlimit_capacity_shards AS c
    WHERE c.capacity_shard = $8::smallint AND c.row_count < $9::bigint
    FOR UPDATE)
INSERT INTO runlimit_fixed_windows
    (policy_id, scope_id, config_fingerprint, subject_key, window_started_at, window_expires_at, used)
SELECT $1::text, $2::text, $3::bytea, $4::bytea, $5::timestamptz, $6::timestamptz, $7::bigint FROM room
ON CONFLICT (config_fingerprint, subject_key) DO NOTHING`
)

var optStatements = [...]struct{ name, sql string }{
	{"pgload_opt_read", sqlOptRead},
	{"pgload_opt_timeouts", sqlOptTimeouts},
	{"pgload_opt_update", sqlOptUpdate},
	{"pgload_opt_insert", sqlOptInsert},
}

const (
	optRead = iota
	optTimeouts
	optUpdate
	optInsert
)

// errConflicts: every attempt met a conflicting admission.
var errConflicts = errors.New("optimistic: every attempt met a conflicting write")

// postgresEpoch is 2000-01-01 UTC, the origin of PostgreSQL's binary
// timestamps, in Unix microseconds (domain.Instant's origin).
const postgresEpoch = 946_684_800_000_000

func newOptimistic(pool *pgxpool.Pool, checks [][]domain.Check, rowsPerShard int64) *optimistic {
	return &optimistic{pool: pool, checks: checks, rowsPerShard: rowsPerShard,
		timeout: postgres.DefaultTimeout, maxAttempts: 64}
}

func (o *optimistic) check(ctx context.Context, caller, key int) (bool, error) {
	d, err := o.admit(ctx, &o.checks[caller][key])
	return d.Outcome() == domain.Allowed, err
}

// admit applies c and returns the decision.
func (o *optimistic) admit(ctx context.Context, c *domain.Check) (domain.Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	conn, err := o.pool.Acquire(ctx)
	if err != nil {
		return domain.Decision{}, err
	}
	defer conn.Release()
	var sd [len(optStatements)]*pgconn.StatementDescription
	for i, st := range optStatements {
		if sd[i], err = conn.Conn().Prepare(ctx, st.name, st.sql); err != nil {
			return domain.Decision{}, err
		}
	}
	pg := conn.Conn().PgConn()
	k := c.CounterKey()
	kb := k.Bytes()
	var shard [2]byte
	binary.BigEndian.PutUint16(shard[:], uint16(postgres.ShardOf(k)))

	for attempt := 1; ; attempt++ {
		obs, present, now, err := o.read(ctx, pg, sd[optRead], kb[:32], kb[32:], shard[:])
		if err != nil {
			return domain.Decision{}, closeOnError(pg, err)
		}
		var (
			next domain.Counter
			d    domain.Decision
		)
		commit, err := domain.EvaluateCheck(c, now, &obs, &next, &d)
		if err != nil || !commit {
			return d, err
		}
		applied, err := o.write(ctx, pg, &sd, c, kb[:], shard[:], present, obs.Counter, next)
		if err != nil {
			return domain.Decision{}, closeOnError(pg, err)
		}
		if applied {
			return d, nil
		}
		if attempt == o.maxAttempts {
			return domain.Decision{}, errConflicts
		}
		o.retries.Add(1)
	}
}

// read is round trip 1: the observation and the database time.
func (o *optimistic) read(ctx context.Context, pg *pgconn.PgConn, sd *pgconn.StatementDescription, fp, sk, shard []byte) (
	obs domain.Observation, present bool, now domain.Instant, err error) {
	rr := pg.ExecStatement(ctx, sd, [][]byte{fp, sk, shard}, binary1, binary1)
	rows := 0
	var decodeErr error
	for rr.NextRow() {
		rows++
		v := rr.Values()
		if len(v) != 5 {
			decodeErr = fmt.Errorf("optimistic: the read returned %d columns", len(v))
			continue
		}
		var ok bool
		if now, ok = decodeTime(v[4]); !ok {
			decodeErr = errors.New("optimistic: the read returned no clock sample")
			continue
		}
		if v[0] != nil {
			present = true
			used, ok1 := decodeInt8(v[0])
			start, ok2 := decodeTime(v[1])
			expires, ok3 := decodeTime(v[2])
			if !ok1 || !ok2 || !ok3 {
				// A counter the domain rejects as corrupt.
				used = -1
			}
			obs.Counter = domain.Counter{Used: used, Start: start, Expires: expires}
			continue
		}
		n, ok := decodeInt8(v[3])
		if !ok {
			decodeErr = errors.New("optimistic: the capacity ledger has no row for the key's shard")
			continue
		}
		obs.Full = n >= o.rowsPerShard
	}
	if _, err := rr.Close(); err != nil {
		return obs, false, 0, err
	}
	if decodeErr != nil {
		return obs, false, 0, decodeErr
	}
	if rows != 1 {
		return obs, false, 0, fmt.Errorf("optimistic: the read returned %d rows", rows)
	}
	return obs, present, now, nil
}

// write is round trip 2: the timeouts and the conditional write, committed
// at the pipeline's end. It reports whether the write applied.
func (o *optimistic) write(ctx context.Context, pg *pgconn.PgConn, sd *[len(optStatements)]*pgconn.StatementDescription,
	c *domain.Check, kb, shard []byte, present bool, old, next domain.Counter) (bool, error) {
	// What is left of the budget, less the store's margin, so that the
	// server's timeout, which keeps the connection usable, fires before the
	// client's deadline, which closes it.
	budget := time.Second
	if deadline, ok := ctx.Deadline(); ok {
		budget = time.Until(deadline)
	}
	budget -= min(budget/10, 100*time.Millisecond)
	timeout := strconv.AppendInt(nil, max(budget.Milliseconds(), 1), 10)
	timeout = append(timeout, "ms"...)

	var used, start, expires [8]byte
	putInt8(used[:], next.Used)
	putTime(start[:], next.Start)
	putTime(expires[:], next.Expires)
	var b pgconn.Batch
	b.ExecStatement(sd[optTimeouts], [][]byte{timeout}, nil, nil)
	if present {
		var oldUsed, oldStart, oldExpires [8]byte
		putInt8(oldUsed[:], old.Used)
		putTime(oldStart[:], old.Start)
		putTime(oldExpires[:], old.Expires)
		b.ExecStatement(sd[optUpdate], [][]byte{kb[:32], kb[32:], used[:], start[:], expires[:],
			oldUsed[:], oldStart[:], oldExpires[:]}, binary1, nil)
	} else {
		var bound [8]byte
		putInt8(bound[:], o.rowsPerShard)
		p := c.Policy()
		b.ExecStatement(sd[optInsert], [][]byte{[]byte(p.ID().String()), []byte(p.Scope().String()),
			kb[:32], kb[32:], start[:], expires[:], used[:], shard, bound[:]}, binary1, nil)
	}
	mrr := pg.ExecBatch(ctx, &b)
	var tags []pgconn.CommandTag
	for mrr.NextResult() {
		tag, err := mrr.ResultReader().Close()
		if err != nil {
			_ = mrr.Close()
			return false, err
		}
		tags = append(tags, tag)
	}
	if err := mrr.Close(); err != nil {
		return false, err
	}
	if len(tags) != 2 {
		return false, fmt.Errorf("optimistic: the write returned %d results", len(tags))
	}
	switch n := tags[1].RowsAffected(); n {
	case 0, 1:
		return n == 1, nil
	default:
		return false, fmt.Errorf("optimistic: the write changed %d rows", n)
	}
}

// closeOnError closes a connection whose state an error leaves unknown, so
// that the pool does not hand it out again.
func closeOnError(pg *pgconn.PgConn, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		_ = pg.Close(context.Background())
	}
	return err
}

func putInt8(b []byte, v int64) { binary.BigEndian.PutUint64(b, uint64(v)) }

func putTime(b []byte, t domain.Instant) { putInt8(b, int64(t)-postgresEpoch) }

func decodeInt8(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b)), true
}

// decodeTime decodes a binary timestamptz; infinite timestamps, which the
// table forbids, are not a time.
func decodeTime(b []byte) (domain.Instant, bool) {
	us, ok := decodeInt8(b)
	if !ok || us == 1<<63-1 || us == -1<<63 || us > 1<<63-1-postgresEpoch {
		return 0, false
	}
	return domain.Instant(us + postgresEpoch), true
}
