package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/runlimit/runlimit/adapters/postgres"
)

// lockReportTimeout bounds the look at pg_locks made after a command gave
// up waiting: a server that stopped answering must not hold the command
// past its --timeout by more than this.
const lockReportTimeout = 2 * time.Second

// ternLockKey is the session-level advisory lock tern holds while it
// migrates (github.com/jackc/tern/v2/migrate's lockNum), shared by every
// tern migrator of the database: Runlimit's and a host's.
const ternLockKey = int64(9628173550095224)

// sqlLockHolders lists the locks that sessions other than the command's
// hold, granted, on a relation of schema $1 under one of Runlimit's names
// or on tern's migration lock ($2): the relation (or "" for the advisory
// lock), the lock mode, the holder's process id and for how long its
// transaction has been open, in whole seconds (null outside one). Never
// the holder's query, user or application name. Every name is
// pg_catalog's, so a hostile search_path cannot change its meaning.
const sqlLockHolders = `SELECT coalesce(c.relname::pg_catalog.text, ''), l.mode, l.pid,
    pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) a.xact_start))::pg_catalog.int8
FROM pg_catalog.pg_locks AS l
LEFT JOIN pg_catalog.pg_class AS c ON l.locktype OPERATOR(pg_catalog.=) 'relation' AND c.oid OPERATOR(pg_catalog.=) l.relation
LEFT JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid OPERATOR(pg_catalog.=) l.pid
WHERE l.granted AND l.pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()
  AND l.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
  AND (
    (n.nspname OPERATOR(pg_catalog.=) $1 AND (pg_catalog.starts_with(c.relname::pg_catalog.text, 'runlimit_')
      OR c.relname OPERATOR(pg_catalog.=) '_sqlx_migrations'))
    OR (l.locktype OPERATOR(pg_catalog.=) 'advisory' AND l.objsubid OPERATOR(pg_catalog.=) 1
      AND l.classid::pg_catalog.int8 OPERATOR(pg_catalog.=) ($2::pg_catalog.int8 OPERATOR(pg_catalog.>>) 32)
      AND l.objid::pg_catalog.int8 OPERATOR(pg_catalog.=) ($2::pg_catalog.int8 OPERATOR(pg_catalog.&) 4294967295))
  )
ORDER BY a.xact_start NULLS LAST, l.pid, 1
LIMIT 8`

// waitedTooLong reports whether err says that the command's work ran out
// of time: its --timeout, or the server's lock or statement timeout set
// from it.
func waitedTooLong(err error) bool {
	var dbErr *postgres.DatabaseError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, postgres.ErrTimeout) ||
		errors.As(err, &dbErr) && dbErr.Timeout
}

// explainTimeout adds to err, when it says that the work ran out of time,
// that the command gave up after timeout (the flag's value) and which
// sessions hold locks on Runlimit's objects in schema, by the lock's
// relation or "tern's migration lock", mode, process id and transaction
// age, so that an operator can find the session (pg_stat_activity) and
// end it or wait for it. Other errors are returned as they are.
func (d *database) explainTimeout(err error, schema string, timeout time.Duration) error {
	if err == nil || !waitedTooLong(err) {
		return err
	}
	text := fmt.Sprintf("%v; gave up after --timeout %s", err, timeout)
	if holders := d.lockHolders(schema); holders != "" {
		text += "; other sessions hold locks on " + holders + ": wait for them, or end them (pg_terminate_backend), then run again"
	} else {
		text += "; no other session holds a lock on Runlimit's objects now: the server may be slow or unreachable"
	}
	return &hintedError{text: text, err: err}
}

// lockHolders describes the locks other sessions hold on Runlimit's
// objects in schema, or "" when there are none or they cannot be read
// within lockReportTimeout.
func (d *database) lockHolders(schema string) string {
	ctx, cancel := context.WithTimeout(context.Background(), lockReportTimeout)
	defer cancel()
	rows, err := d.pool.Query(ctx, sqlLockHolders, schema, ternLockKey)
	if err != nil {
		return ""
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var relation, mode string
		var pid int32
		var age *int64
		if err := rows.Scan(&relation, &mode, &pid, &age); err != nil {
			return ""
		}
		what := relation
		if what == "" {
			what = "tern's migration lock (another migration holds it)"
		}
		held := fmt.Sprintf("%s (%s, held by pid %d", what, mode, pid)
		if age != nil {
			held += fmt.Sprintf(", its transaction open for %ds", *age)
		}
		out = append(out, held+")")
	}
	if rows.Err() != nil {
		return ""
	}
	return strings.Join(out, ", ")
}

// defaultMigrateTimeout is migrate's --timeout.
const defaultMigrateTimeout = time.Minute

// maxMigrateTimeout is the longest --timeout of migrate: the session
// timeouts set from it (see sessionTimeouts) are whole milliseconds that
// PostgreSQL keeps in a 32-bit integer, and a server refuses a connection
// whose startup parameters set a larger one.
const maxMigrateTimeout = math.MaxInt32 * time.Millisecond
