package postgres

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/runlimit/runlimit/migrations"
)

// statements is the SQL of one store, rendered for its schema. Every table
// and function of Runlimit's is named in full, schema quoted; every built-in
// is qualified with pg_catalog; every parameter is cast to its type, so the
// server resolves each name and operator to exactly one object, whatever the
// session's search_path and whatever another role created. A schema that
// some role could create objects in and that the session searches first
// (the default search_path begins with "$user") is thereby harmless.
type statements struct {
	// stateKey is the key of the store's state in a connection's
	// CustomData: stores with the same schema share prepared statements.
	stateKey string
	// prepared are the statements prepared on every connection, by index
	// (stmtBegin...), with the names they are prepared under.
	prepared [stmtCount]struct{ name, sql string }

	cleanup string
	ledger  string
	// warmLock takes the tables' ACCESS SHARE locks for the warm-up.
	warmLock string
	sizes    string
	// versionTable is the quoted, qualified name of the migrations'
	// version table; version reads it once it is known to exist.
	versionTable string
	version      string
}

// Prepared statements, by index, in the order they are prepared: one that
// names the schema's objects first, so that a missing schema fails the
// first preparation and leaves the connection with none of them.
const (
	stmtReadOne = iota
	stmtLockOne
	stmtUpdateOne
	stmtInsertOne
	stmtLockMany
	stmtReadMany
	stmtUpdateMany
	stmtInsertMany
	stmtOptRead
	stmtOptUpdate
	stmtOptLock
	stmtOptInsert
	stmtOptTimeouts
	stmtLockCounter
	stmtBegin
	stmtCommit
	stmtCount
)

func newStatements(schema string) *statements {
	sum := sha256.Sum256([]byte(schema))
	tag := hex.EncodeToString(sum[:4])
	q := strings.NewReplacer(
		"{windows}", pgx.Identifier{schema, "runlimit_fixed_windows"}.Sanitize(),
		"{ledger}", pgx.Identifier{schema, "runlimit_capacity_shards"}.Sanitize(),
		"{version_table}", pgx.Identifier{schema, migrations.VersionTable}.Sanitize(),
		"{lock_counter}", pgx.Identifier{schema, "runlimit_lock_counter"}.Sanitize(),
	).Replace
	st := &statements{
		stateKey:     "github.com/runlimit/runlimit/adapters/postgres:" + schema,
		cleanup:      q(sqlCleanup),
		warmLock:     q(sqlWarmLock),
		ledger:       q(sqlLedger),
		sizes:        q(sqlSizes),
		versionTable: q("{version_table}"),
		version:      q(sqlVersion),
	}
	for i, sql := range [stmtCount]string{
		stmtBegin:      sqlBegin,
		stmtCommit:     sqlCommit,
		stmtLockOne:    sqlLockOne,
		stmtReadOne:    sqlReadOne,
		stmtUpdateOne:  sqlUpdateOne,
		stmtInsertOne:  sqlInsertOne,
		stmtLockMany:   sqlLockMany,
		stmtReadMany:   sqlReadMany,
		stmtUpdateMany: sqlUpdateMany,
		stmtInsertMany: sqlInsertMany,

		stmtOptRead:     sqlOptRead,
		stmtOptUpdate:   sqlOptUpdate,
		stmtOptLock:     sqlOptLock,
		stmtOptInsert:   sqlOptInsert,
		stmtOptTimeouts: sqlOptTimeouts,
		stmtLockCounter: sqlLockCounter,
	} {
		// Names carry the schema's tag: stores of two schemas may share a
		// pool.
		st.prepared[i].name = "runlimit_" + tag + "_" + statementNames[i]
		st.prepared[i].sql = q(sql)
	}
	return st
}

var statementNames = [stmtCount]string{
	stmtBegin:      "begin",
	stmtCommit:     "commit",
	stmtLockOne:    "lock_key",
	stmtReadOne:    "read_one",
	stmtUpdateOne:  "update_one",
	stmtInsertOne:  "insert_one",
	stmtLockMany:   "lock_many",
	stmtReadMany:   "read_many",
	stmtUpdateMany: "update_many",
	stmtInsertMany: "insert_many",

	stmtOptRead:     "opt_read",
	stmtOptUpdate:   "opt_update",
	stmtOptLock:     "opt_lock",
	stmtOptInsert:   "opt_insert",
	stmtOptTimeouts: "opt_timeouts",
	stmtLockCounter: "lock_counter",
}

const (
	sqlBegin    = "BEGIN ISOLATION LEVEL READ COMMITTED"
	sqlCommit   = "COMMIT"
	sqlRollback = "ROLLBACK"
	// sqlBeginReadOnly starts the transactions of Ready and of the stats
	// reads.
	sqlBeginReadOnly = "BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY"
)

// The statements of a batch of one check, whether it came through Admit
// or AdmitCheck (admit.go runs both through one flow): the steps of the
// batch statements below, in the same order, as scalar statements, which
// cost the server a fraction of the array ones. Round trip 1 is BEGIN,
// sqlLockOne and sqlReadOne; round trip 2 is one UPDATE or INSERT and
// COMMIT.
//
// Round trip 1 used to be BEGIN and one call of the PL/pgSQL function
// runlimit_lock_counter (sqlLockCounter), which took the same steps
// statement after statement inside the server. That call cost the server
// more than the statement it saved: entering the function, switching to
// its pinned search_path and back, and building its composite answer
// (benchmarks/README.md, fifth session, measures both with pgbench).
const (
	// sqlLockCounter is the call of the previous release's round trip 1,
	// which that release's replicas still make. It is prepared on every
	// connection and never run: preparing it needs the function, so a
	// connection is made ready only on a schema that has version 6's
	// objects (a Rust Runlimit schema the migrations have not adopted, or
	// an older one of this library's, lacks it), as when admissions called
	// it. The casts leave exactly one function the call can mean.
	sqlLockCounter = `SELECT {lock_counter}($1::bigint, $2::bytea, $3::bytea, $4::smallint, $5::text, $6::text)`

	// sqlLockOne is sqlLockMany for one key: the transaction's settings, as
	// a one-time filter that runs before the advisory lock is requested,
	// then the key's advisory lock. $1 bounds statements and lock waits,
	// $2 the client's pauses between statements, $3 is the lock id.
	sqlLockOne = `SELECT pg_catalog.pg_advisory_xact_lock($3::bigint)
WHERE (SELECT pg_catalog.set_config('statement_timeout', $1::text, true) IS NOT NULL
          AND pg_catalog.set_config('lock_timeout', $1::text, true) IS NOT NULL
          AND pg_catalog.set_config('idle_in_transaction_session_timeout', $2::text, true) IS NOT NULL
          AND pg_catalog.set_config('enable_seqscan', 'off', true) IS NOT NULL)`

	// sqlReadOne takes the remaining locks of one check and the clock
	// sample in one statement, after sqlLockOne: under read committed its
	// snapshot is taken only now, so it sees a counter that the previous
	// holder of the key's advisory lock created. It always returns one row:
	// used, started_at, expires_at (NULLs when the key has no row), the
	// ledger count of the key's shard (only when it has none) and the
	// clock.
	//
	// The joins run in the protocol's order, each waiting for its lock
	// before the next begins:
	//
	//  1. l: the key's counter, read and locked. A row updated while we
	//     waited is re-read in its latest version; one deleted meanwhile is
	//     not there.
	//  2. g: the ledger row of the key's shard, locked only when l found no
	//     counter. It reads l, so it runs after it, and its condition on l
	//     is a one-time filter in front of the ledger's scan: a renewal
	//     never queues on a ledger row shared with thousands of counters.
	//  3. The clock, in the select list of the outermost join, which is
	//     evaluated once both joins have produced their row, every lock
	//     held.
	sqlReadOne = `SELECT l.used, l.window_started_at, l.window_expires_at, g.row_count, pg_catalog.clock_timestamp()
FROM (SELECT) AS one
LEFT JOIN (SELECT w.used, w.window_started_at, w.window_expires_at
           FROM {windows} AS w
           WHERE w.config_fingerprint = $1::bytea AND w.subject_key = $2::bytea
           FOR UPDATE) AS l ON true
LEFT JOIN LATERAL (SELECT c.row_count
                   FROM {ledger} AS c
                   WHERE c.capacity_shard = $3::smallint AND l.used IS NULL
                   FOR UPDATE) AS g ON true`

	sqlUpdateOne = `UPDATE {windows}
SET used = $3::bigint, window_started_at = $4::timestamptz, window_expires_at = $5::timestamptz
WHERE config_fingerprint = $1::bytea AND subject_key = $2::bytea`

	sqlInsertOne = `INSERT INTO {windows}
    (config_fingerprint, subject_key, used, window_started_at, window_expires_at, policy_id, scope_id)
VALUES ($1::bytea, $2::bytea, $3::bigint, $4::timestamptz, $5::timestamptz, $6::text, $7::text)`
)

// The statements of the optimistic protocol (Config.Protocol), for a
// single check. Round trip 1 is sqlOptTimeouts then sqlOptRead, outside any
// explicit transaction; round trip 2, for an allowed check, is one
// conditional write: sqlOptTimeouts then sqlOptUpdate for a stored key,
// sqlOptLock then sqlOptInsert for a new one. The statements of one round
// trip share an implicit transaction, which ends (commits, for a write)
// when the server reaches the pipeline's Sync.
//
// Every statement that names a table waits for its table's lock before it
// runs a single expression of its own: the server locks the tables of a
// prepared statement when it binds it. A role holding an ACCESS EXCLUSIVE
// lock on the table (an ALTER TABLE, a LOCK TABLE, which UPDATE privilege
// allows) would hold up such a statement with no timeout of its own until
// the store's budget ran out and the driver closed the connection. So a
// statement of its own, which names no table, sets the implicit
// transaction's timeouts first, from the caller's deadline: sqlOptTimeouts
// for the read and the update, sqlOptLock (before its advisory lock) for
// the insert. lock_timeout is read when a wait begins, so it bounds every
// wait of the statements after it; statement_timeout bounds their run.
// That costs one more statement in the round trip, not another round
// trip: a Bind and an Execute of a prepared statement that reads nothing.
const (
	// sqlOptTimeouts sets the statement and lock timeouts of the implicit
	// transaction it starts, from $1.
	sqlOptTimeouts = `SELECT pg_catalog.set_config('statement_timeout', $1::text, true) IS NOT NULL
   AND pg_catalog.set_config('lock_timeout', $1::text, true) IS NOT NULL`

	// sqlOptRead returns exactly one row, whether the key has a row or not:
	// the counter (NULLs for a key without a row), the ledger count of the
	// key's shard (only for a key without a row) and the clock, sampled
	// after the statement's snapshot was taken. It takes no lock but its
	// tables' shared ones, so nothing the store does makes it wait.
	sqlOptRead = `SELECT w.used, w.window_started_at, w.window_expires_at,
       CASE WHEN w.used IS NULL THEN
           (SELECT c.row_count FROM {ledger} AS c WHERE c.capacity_shard = $3::smallint)
       END,
       pg_catalog.clock_timestamp()
FROM (SELECT) AS one
LEFT JOIN {windows} AS w ON w.config_fingerprint = $1::bytea AND w.subject_key = $2::bytea`

	// sqlOptUpdate applies only while the counter is exactly the one read.
	// Under read committed, an UPDATE that finds its row changed by a
	// transaction it waited for re-evaluates the condition on the latest
	// version, so a concurrent admission, renewal or cleanup makes it
	// change nothing. A counter's (used, start, expiry) never comes back to
	// an earlier value: used grows within a window, and a new window starts
	// later.
	sqlOptUpdate = `UPDATE {windows}
SET used = $3::bigint, window_started_at = $4::timestamptz, window_expires_at = $5::timestamptz
WHERE config_fingerprint = $1::bytea AND subject_key = $2::bytea
  AND used = $6::bigint AND window_started_at = $7::timestamptz AND window_expires_at = $8::timestamptz`

	// sqlOptLock is the first statement of a new key's insert: the lock
	// timeout, then the key's advisory lock, in that order (one
	// expression, evaluated left to right), as the locked protocol takes
	// it. It keeps the insert from racing a locked admission that found
	// the key absent, and any other insert of the key.
	sqlOptLock = `SELECT pg_catalog.set_config('lock_timeout', $1::text, true) IS NOT NULL
   AND pg_catalog.pg_advisory_xact_lock($2::bigint)::text IS NOT NULL`

	// sqlOptInsert creates a key's row once sqlOptLock holds the key's
	// advisory lock, in the locked protocol's order. It runs in a statement
	// of its own: under read committed its snapshot is taken only now, so
	// it sees every counter of the key committed by the admissions it
	// waited for, and a counter that cleanup is deleting.
	//
	//  1. The key's counter, locked if there is one: a counter committed
	//     since the read is a conflict, and the insert changes nothing. A
	//     counter that cleanup is deleting is waited for here, before the
	//     ledger row: cleanup's ledger trigger waits for that row, and
	//     holding it while waiting for cleanup would deadlock.
	//  2. The ledger row of the key's shard, locked only while the shard is
	//     below its bound (a row that changed while the lock was awaited is
	//     re-read in its latest version).
	//  3. The clock (late, which reads room and so runs after its lock).
	//     The window starts then, as the locked protocol's would, not at
	//     the read's sample: between the read and the insert, another
	//     admission may have created the key's counter at a later time and
	//     cleanup deleted it once it expired, leaving nothing to conflict
	//     with, and a window anchored at the read would start before that
	//     admission's. The domain anchors a new key's window at the time of
	//     the evaluation, and its verdict on a new key does not depend on
	//     that time, so the window it evaluated ($4, $5, anchored at the
	//     read) is moved by the time since: exactly what evaluating at the
	//     later sample gives. The shift is less than a day, a plain count
	//     of microseconds, and never negative.
	//  4. The insert, which the ledger's trigger counts. ON CONFLICT DO
	//     NOTHING turns a counter created by a writer that takes no
	//     advisory lock into a conflict rather than an error.
	sqlOptInsert = `WITH room AS (
    SELECT c.capacity_shard FROM {ledger} AS c
    WHERE NOT EXISTS (SELECT FROM {windows} AS w
                      WHERE w.config_fingerprint = $1::bytea AND w.subject_key = $2::bytea
                      FOR UPDATE)
      AND c.capacity_shard = $8::smallint AND c.row_count < $9::bigint
    FOR UPDATE),
late AS (
    SELECT GREATEST(pg_catalog.clock_timestamp() - $4::timestamptz, interval '0') AS by FROM room)
INSERT INTO {windows}
    (config_fingerprint, subject_key, used, window_started_at, window_expires_at, policy_id, scope_id)
SELECT $1::bytea, $2::bytea, $3::bigint, $4::timestamptz + late.by, $5::timestamptz + late.by, $6::text, $7::text FROM late
ON CONFLICT (config_fingerprint, subject_key) DO NOTHING`
)

// The statements of a batch of two or more checks. Round trip 1 sends,
// pipelined:
//
//	BEGIN; settings and advisory locks; row locks, ledger locks and the
//	clock sample
//
// and round trip 2 sends the writes and COMMIT, or ROLLBACK when the batch
// is denied. Every statement works on arrays, so the number of statements
// does not grow with the batch, and each costs the server about as much as
// the next: round trip 1 is as few statements as the lock order allows.
const (
	// sqlLockMany applies the transaction's settings, then serialises every
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
	// Generic plans: each statement is prepared once per connection, but
	// PostgreSQL would otherwise re-plan the array statements on every
	// execution, because a generic plan's guess of 10 elements per array
	// looks costlier than a custom plan for the array at hand, although both
	// are the same nested loop over the primary key. Planning was most of
	// the cost of round trip 1. A generic plan cannot know how many shards
	// the ledger lookup wants either, and would scan all 256 ledger rows
	// rather than probe their primary key; sequential scans are off for the
	// transaction (every statement of it has an index to use).
	//
	// $1 bounds statements and lock waits (from the caller's deadline), $2
	// the client's pauses between statements (from the store's budget).
	sqlLockMany = `SELECT pg_catalog.pg_advisory_xact_lock(l.id)
FROM pg_catalog.unnest($3::bigint[]) AS l(id)
WHERE (SELECT pg_catalog.set_config('statement_timeout', $1::text, true) IS NOT NULL
          AND pg_catalog.set_config('lock_timeout', $1::text, true) IS NOT NULL
          AND pg_catalog.set_config('idle_in_transaction_session_timeout', $2::text, true) IS NOT NULL
          AND pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true) IS NOT NULL
          AND pg_catalog.set_config('enable_seqscan', 'off', true) IS NOT NULL)
ORDER BY l.id`

	// sqlReadMany takes the remaining locks and the clock sample in one
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
	sqlReadMany = `WITH locked AS MATERIALIZED (
    SELECT k.i, w.used, w.window_started_at, w.window_expires_at
    FROM ROWS FROM (pg_catalog.unnest($1::bytea[]), pg_catalog.unnest($2::bytea[]))
         WITH ORDINALITY AS k(fp, sk, i)
    JOIN {windows} AS w
      ON w.config_fingerprint = k.fp AND w.subject_key = k.sk
    ORDER BY w.config_fingerprint, w.subject_key
    FOR UPDATE OF w),
ledger AS MATERIALIZED (
    SELECT c.capacity_shard, c.row_count
    FROM {ledger} AS c
    WHERE c.capacity_shard = ANY (ARRAY(
        SELECT n.shard
        FROM pg_catalog.unnest($3::smallint[]) WITH ORDINALITY AS n(shard, i)
        WHERE NOT EXISTS (SELECT FROM locked WHERE locked.i = n.i)))
    ORDER BY c.capacity_shard
    FOR UPDATE OF c)
SELECT 0::smallint, i, used, window_started_at, window_expires_at FROM locked
UNION ALL
SELECT 1::smallint, capacity_shard::bigint, row_count, NULL::timestamptz, NULL::timestamptz FROM ledger
UNION ALL
SELECT 2::smallint, 0::bigint, 0::bigint, pg_catalog.clock_timestamp(), NULL::timestamptz`

	// sqlUpdateMany writes the counters that have a row. Their rows are
	// locked, so every one of them is still there.
	sqlUpdateMany = `UPDATE {windows} AS w
SET used = n.used, window_started_at = n.started, window_expires_at = n.expires
FROM ROWS FROM (pg_catalog.unnest($1::bytea[]), pg_catalog.unnest($2::bytea[]),
                pg_catalog.unnest($3::bigint[]), pg_catalog.unnest($4::timestamptz[]),
                pg_catalog.unnest($5::timestamptz[])) AS n(fp, sk, used, started, expires)
WHERE w.config_fingerprint = n.fp AND w.subject_key = n.sk`

	// sqlInsertMany creates the counters that had no row. The advisory
	// locks keep anyone else from creating them meanwhile; the ledger
	// trigger counts them against their shards, whose ledger rows are
	// already locked.
	sqlInsertMany = `INSERT INTO {windows}
    (config_fingerprint, subject_key, used, window_started_at, window_expires_at, policy_id, scope_id)
SELECT * FROM ROWS FROM (pg_catalog.unnest($1::bytea[]), pg_catalog.unnest($2::bytea[]),
                         pg_catalog.unnest($3::bigint[]), pg_catalog.unnest($4::timestamptz[]),
                         pg_catalog.unnest($5::timestamptz[]), pg_catalog.unnest($6::text[]),
                         pg_catalog.unnest($7::text[]))`
)

// The statements that ready a connection and a cleanup (prepare.go,
// cleanup.go), sent before anything else.
const (
	// sqlSettings sets the timeouts of the transaction it runs in ($1 for
	// statements, $2 for lock waits, $3 for idle gaps), overriding the
	// role's and the database's settings, and reads the settings the store
	// cannot set for itself (settings.go checks them). Every name in it is
	// qualified and it calls no operator, so it reads them truthfully
	// whatever the search_path. The warm-up and cleanup run it first.
	sqlSettings = `SELECT pg_catalog.set_config('statement_timeout', $1::pg_catalog.text, true),
       pg_catalog.set_config('lock_timeout', $2::pg_catalog.text, true),
       pg_catalog.set_config('idle_in_transaction_session_timeout', $3::pg_catalog.text, true),
       pg_catalog.current_setting('session_replication_role'),
       pg_catalog.current_setting('search_path')`

	// sqlSettingsGuard fails, and so makes the server skip everything
	// after it in the warm-up's pipeline (every preparation and warming
	// read), when the session's settings are unsafe in a way the server can
	// judge: session_replication_role other than origin, or a schema that
	// exists and is searched before pg_catalog, whose operators the warming
	// reads would otherwise call, handed every stored key, before the
	// client has looked at what sqlSettings read. (checkSettings, on the
	// client, also refuses a schema named before pg_catalog that does not
	// exist yet, which holds no code for now.) The error is a failed cast
	// to bool of a text that says why; every operator, function and type
	// is named in full, and the text depends on the session, so that the
	// planner cannot fold the cast, and fail, ahead of the test.
	sqlSettingsGuard = `SELECT (CASE
    WHEN pg_catalog.current_setting('session_replication_role') OPERATOR(pg_catalog.=) 'origin'::pg_catalog.text
     AND (SELECT s.name
          FROM pg_catalog.unnest(pg_catalog.current_schemas(true)) WITH ORDINALITY AS s(name, i)
          WHERE NOT pg_catalog.starts_with(s.name::pg_catalog.text, 'pg_temp_'::pg_catalog.text)
          ORDER BY s.i
          LIMIT 1) OPERATOR(pg_catalog.=) 'pg_catalog'::pg_catalog.name
    THEN 'true'::pg_catalog.text
    ELSE 'runlimit: the session''s settings are unsafe (session_replication_role or search_path)'::pg_catalog.text
END)::pg_catalog.bool`

	// sqlWarmLock takes, under the lock timeout just set, the locks that
	// preparing the statements would take one by one: a table locked
	// elsewhere then fails the warm-up before it has prepared anything.
	sqlWarmLock = `LOCK TABLE {windows}, {ledger} IN ACCESS SHARE MODE`
)

// Maintenance (cleanup.go, stats.go).
const (
	// sqlCleanup deletes at most $1 expired rows, oldest expiry first,
	// walking the expiry index from its start. The scalar subquery samples
	// the database clock once for the whole statement. Rows locked by an
	// admission are skipped rather than waited for: such a row is being
	// renewed, and a row renewed after the statement's snapshot is re-read
	// when locked and fails the re-checked expiry condition, so an active
	// row is never deleted. The rows are then deleted by their physical
	// address (a TID scan), which cannot change while this statement holds
	// their locks; a join back on the key would let the planner scan the
	// whole table. The ledger's delete trigger frees the rows' slots in the
	// same transaction.
	sqlCleanup = `DELETE FROM {windows}
WHERE ctid = ANY (ARRAY(
    SELECT e.ctid
    FROM {windows} AS e
    WHERE e.window_expires_at <= (SELECT pg_catalog.clock_timestamp())
    ORDER BY e.window_expires_at
    LIMIT $1::bigint
    FOR UPDATE SKIP LOCKED))`

	sqlLedger = `SELECT capacity_shard, row_count FROM {ledger} ORDER BY capacity_shard`

	// sqlTracked reports whether the version table $1 (quoted and
	// qualified) exists; the migrations record the schema's version there,
	// unless the host vendored the schema into its own migrations.
	sqlTracked = `SELECT pg_catalog.to_regclass($1::pg_catalog.text) IS NOT NULL`
	// sqlPublicTriggerFunction names the first SECURITY DEFINER trigger
	// function of Runlimit's in schema $1 that PUBLIC may execute (a NULL
	// ACL is the default, which lets it): migration step 7 revokes that,
	// since any role could otherwise attach it to a table of its own.
	sqlPublicTriggerFunction = `SELECT pg_catalog.min(p.proname::pg_catalog.text)
FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
WHERE n.nspname OPERATOR(pg_catalog.=) $1::pg_catalog.text::pg_catalog.name
  AND p.prosecdef
  AND p.prorettype OPERATOR(pg_catalog.=) 'pg_catalog.trigger'::pg_catalog.regtype
  AND pg_catalog.starts_with(p.proname::pg_catalog.text, 'runlimit_'::pg_catalog.text)
  AND (p.proacl IS NULL OR EXISTS (
        SELECT FROM pg_catalog.aclexplode(p.proacl) AS a
        WHERE a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid
          AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'::pg_catalog.text))`
	// sqlVersion reads the version the migrations recorded.
	sqlVersion = `SELECT pg_catalog.max(version) FROM {version_table}`

	// sqlSizes runs under whatever search_path the session has (stats
	// do not refuse unsafe settings), so its operators are named in full:
	// an = found through the search_path could be another role's code.
	sqlSizes = `SELECT pg_catalog.pg_table_size(c.oid), pg_catalog.pg_indexes_size(c.oid),
       COALESCE(s.n_live_tup, 0::pg_catalog.int8), COALESCE(s.n_dead_tup, 0::pg_catalog.int8)
FROM pg_catalog.pg_class AS c
LEFT JOIN pg_catalog.pg_stat_user_tables AS s ON s.relid OPERATOR(pg_catalog.=) c.oid
WHERE c.oid OPERATOR(pg_catalog.=) '{windows}'::pg_catalog.regclass::pg_catalog.oid`
)
