package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATE codes the server uses when a timeout set from the budget fires.
const (
	sqlstateQueryCanceled     = "57014" // statement_timeout
	sqlstateLockNotAvailable  = "55P03" // lock_timeout
	sqlstateIdleInTransaction = "25P03" // idle_in_transaction_session_timeout
)

// stage says how far a transaction had got when an error was met.
type stage uint8

const (
	// stageOpen: COMMIT was never sent. Nothing can have been committed.
	stageOpen stage = iota
	// stageBeforeCommit: the error belongs to a statement pipelined ahead of
	// COMMIT.
	stageBeforeCommit
	// stageCommit: the error belongs to COMMIT itself.
	stageCommit
)

// mayHaveCommitted is the one rule deciding whether a failed transaction may
// nevertheless have committed.
func mayHaveCommitted(st stage, err error) bool {
	var pgErr *pgconn.PgError
	switch st {
	case stageBeforeCommit:
		// The server skips every message after a failed statement until the
		// pipeline's Sync, so a statement error reported before COMMIT means
		// COMMIT never ran. Anything else (a broken connection, a deadline)
		// leaves a COMMIT that was sent and whose outcome is unknown.
		return !errors.As(err, &pgErr) && !pgconn.SafeToRetry(err)
	case stageCommit:
		// An error from COMMIT, even the server's, is never read as "rolled
		// back": callers must not retry on a guess. Only a request that
		// provably never left the client is safe.
		return !pgconn.SafeToRetry(err)
	}
	return false
}

// isTimeout reports whether err is a client-side deadline or a server
// timeout set from the operation's budget.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case sqlstateQueryCanceled, sqlstateLockNotAvailable, sqlstateIdleInTransaction:
		return true
	}
	return false
}

// interpretError translates an error met at step op of an admission into a
// [CheckError], the only error type Admit returns for a backend failure.
func interpretError(op string, err error) *CheckError {
	st := stageOpen
	switch op {
	case OpWrite:
		st = stageBeforeCommit
	case OpCommit:
		st = stageCommit
	}
	return &CheckError{Op: op, Err: err, Timeout: isTimeout(err), MayHaveConsumed: mayHaveCommitted(st, err)}
}

// interpretMaintenanceError translates an error of a cleanup or stats read
// met at stage st into a [MaintenanceError].
func interpretMaintenanceError(op string, st stage, err error) *MaintenanceError {
	return &MaintenanceError{Op: op, Err: err, Timeout: isTimeout(err), MayHaveRemoved: mayHaveCommitted(st, err)}
}
