package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runlimit/runlimit/internal/pgerror"
)

// SQLSTATE codes after which a connection's prepared statements cannot be
// trusted: a statement is gone (someone ran DEALLOCATE or DISCARD), or the
// schema changed under it.
const (
	sqlstateNoSuchStatement = "26000" // invalid_sql_statement_name
	sqlstatePlanChanged     = "0A000" // cached plan must not change result type
)

// sqlstateDuplicateStatement is the error of a preparation whose name is
// taken: on a connection the store had not prepared, by a statement of
// another client of the same server session (see [ErrPooler]).
const sqlstateDuplicateStatement = "42P05" // duplicate_prepared_statement

// sqlstateProtocolViolation is, among others, the code of PgBouncer's
// refusal of a transaction block in statement pooling mode.
const sqlstateProtocolViolation = "08P01" // protocol_violation

// sqlstateSerializationFailure is the error of a statement that, under a
// stricter isolation than read committed, met a row changed since its
// snapshot.
const sqlstateSerializationFailure = "40001" // serialization_failure

// stage says how far a transaction had got when an error was met.
type stage uint8

const (
	// stageOpen: COMMIT was never sent. Nothing can have been committed.
	stageOpen stage = iota
	// stageBeforeCommit: COMMIT was sent, pipelined behind the statement
	// whose result carried the error.
	stageBeforeCommit
	// stageCommit: COMMIT was sent and the error is COMMIT's own, or came
	// while its answer was awaited: a broken connection, a deadline, a
	// caller who left.
	stageCommit
)

// mayHaveCommitted is the one rule deciding whether a failed transaction
// may nevertheless have committed: admissions, cleanup, and callers who
// gave up all ask it. err is the error as it came, before sanitizing.
func mayHaveCommitted(st stage, err error) bool {
	var pgErr *pgconn.PgError
	switch st {
	case stageBeforeCommit:
		// The server skips every message after a failed statement until the
		// pipeline's Sync, so a statement error reported before COMMIT means
		// COMMIT never ran. Anything else (a broken connection, a deadline)
		// leaves a COMMIT that was sent and whose outcome is unknown.
		return !errors.As(err, &pgErr) && !unsent(err)
	case stageCommit:
		// An error from COMMIT, even the server's, is never read as "rolled
		// back": callers must not retry on a guess. Only a request that
		// provably never left the client is safe.
		return !unsent(err)
	}
	return false
}

// unsent reports whether err proves that the round trip it ended never
// left the client: the operation's context had ended before the driver
// sent anything. pgconn's SafeToRetry alone is no such proof: a read that
// fails as a result begins makes pgconn close the connection and report
// "conn closed", marked safe to retry, although the request was written
// in full and the server may have committed it.
func unsent(err error) bool {
	return pgconn.SafeToRetry(err) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// lostRace reports whether err, met in an optimistic round trip
// (which runs in implicit transactions, at the session's default isolation),
// is a serialization failure: under a stricter isolation than read
// committed, the server aborted the transaction because a concurrent one
// changed what it read or meant to write. Nothing was committed, and the
// check may start again as after a conflict it detects itself.
//
// That holds at every stage, COMMIT's included, for a failure the server
// reported as an ERROR: a statement's (the read's, or the write's, after
// which the server skips everything until the Sync), or the implicit
// COMMIT's own, which under serializable isolation is the pre-commit check
// that runs before the commit record is written, and whose ERROR aborts the
// transaction. A FATAL, whatever its code, ends the session at a point the
// client cannot see, and is no proof.
func lostRace(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != sqlstateSerializationFailure {
		return false
	}
	severity := pgErr.SeverityUnlocalized
	if severity == "" {
		severity = pgErr.Severity
	}
	return severity == "ERROR"
}

// isTimeout reports whether err, sanitized or a context's, is a client-side
// deadline or a server timeout set from the operation's budget.
func isTimeout(err error) bool {
	var dbErr *DatabaseError
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &dbErr) && dbErr.Timeout
}

// sanitize is the adapter's edge: it turns a driver error into a
// [*DatabaseError], which keeps the SQLSTATE, severity, constraint, a safe
// message and whether it timed out, and drops the server's detail, hint,
// context and internal query (a unique violation's detail spells key bytes)
// and any connection config (it holds the password). The store's own errors
// pass through.
func sanitize(err error) error {
	var own *storeError
	var setting *SettingError
	if err == nil || errors.As(err, &own) || errors.As(err, &setting) {
		return err
	}
	return pgerror.Sanitize(err)
}

// interpretError translates an error met at step op of an admission, at
// stage st, into an [AdmissionError], the only error type Admit returns for
// a backend failure. In round trip 2 (st past stageOpen) the step follows
// from the rule: [OpWrite] when the error proves COMMIT never ran,
// [OpCommit] otherwise.
func interpretError(op string, st stage, err error) *AdmissionError {
	if ae, ok := err.(*AdmissionError); ok {
		return ae
	}
	safe := sanitize(err)
	may := mayHaveCommitted(st, err)
	switch {
	case st == stageBeforeCommit && !may:
		op = OpWrite
	case st != stageOpen:
		op = OpCommit
	}
	return &AdmissionError{Op: op, Err: safe, Timeout: isTimeout(safe), MayHaveConsumed: may}
}

// interpretMaintenanceError translates an error of a cleanup or stats read
// met at stage st into a [MaintenanceError].
func interpretMaintenanceError(op string, st stage, err error) *MaintenanceError {
	if me, ok := err.(*MaintenanceError); ok {
		return me
	}
	safe := sanitize(err)
	return &MaintenanceError{Op: op, Err: safe, Timeout: isTimeout(safe), MayHaveRemoved: op == opCleanup && mayHaveCommitted(st, err)}
}

// leftStage is the stage of a transaction whose caller gave up: COMMIT's
// own when it had been sent.
func leftStage(committing bool) stage {
	if committing {
		return stageCommit
	}
	return stageOpen
}
