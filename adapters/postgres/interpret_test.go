package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// safeErr is an error pgconn marks safe to retry that is no proof that
// nothing was sent: the "conn closed" it reports when a read fails as a
// result begins, after the request was written in full.
type safeErr struct{}

func (safeErr) Error() string     { return "conn closed" }
func (safeErr) SafeToRetry() bool { return true }

// unsentErr is the error pgconn reports when the operation's context had
// ended before it sent anything: safe to retry, and a context's.
type unsentErr struct{ error }

func (e unsentErr) Unwrap() error   { return e.error }
func (unsentErr) SafeToRetry() bool { return true }

func TestInterpretError(t *testing.T) {
	t.Parallel()
	serverErr := &pgconn.PgError{Code: "23505", Message: "duplicate key value violates unique constraint"}
	lockTimeout := &pgconn.PgError{Code: "55P03", Message: "canceling statement due to lock timeout"}
	stmtTimeout := &pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}
	idleTimeout := &pgconn.PgError{Code: "25P03", Message: "terminating connection due to idle-in-transaction timeout"}
	tests := []struct {
		op       string // the step the caller names
		st       stage
		err      error
		want     string // the step reported
		consumed bool
		timeout  bool
	}{
		{OpAcquire, stageOpen, context.DeadlineExceeded, OpAcquire, false, true},
		{OpAcquire, stageOpen, errors.New("closed pool"), OpAcquire, false, false},
		{OpLock, stageOpen, lockTimeout, OpLock, false, true},
		{OpLock, stageOpen, stmtTimeout, OpLock, false, true},
		{OpLock, stageOpen, io.ErrUnexpectedEOF, OpLock, false, false},
		{OpLock, stageOpen, context.Canceled, OpLock, false, false},
		{OpLock, stageOpen, fmt.Errorf("read: %w", context.DeadlineExceeded), OpLock, false, true},
		{OpEvaluate, stageOpen, &domain.CorruptCounterError{Index: 0}, OpEvaluate, false, false},
		// Round trip 2: the rule says whether COMMIT can have run, and
		// the step follows from it.
		{OpCommit, stageBeforeCommit, serverErr, OpWrite, false, false},
		{OpCommit, stageBeforeCommit, stmtTimeout, OpWrite, false, true},
		{OpCommit, stageBeforeCommit, idleTimeout, OpWrite, false, true},
		{OpCommit, stageBeforeCommit, unsentErr{context.DeadlineExceeded}, OpWrite, false, true},
		{OpCommit, stageBeforeCommit, unsentErr{context.Canceled}, OpWrite, false, false},
		{OpCommit, stageBeforeCommit, safeErr{}, OpCommit, true, false},
		{OpCommit, stageBeforeCommit, io.ErrUnexpectedEOF, OpCommit, true, false},
		{OpCommit, stageBeforeCommit, context.DeadlineExceeded, OpCommit, true, true},
		{OpCommit, stageBeforeCommit, errIncomplete, OpCommit, true, false},
		{OpCommit, stageCommit, serverErr, OpCommit, true, false},
		{OpCommit, stageCommit, context.DeadlineExceeded, OpCommit, true, true},
		{OpCommit, stageCommit, io.ErrUnexpectedEOF, OpCommit, true, false},
		{OpCommit, stageCommit, context.Canceled, OpCommit, true, false},
		{OpCommit, stageCommit, ErrCommitOutcome, OpCommit, true, false},
		{OpCommit, stageCommit, unsentErr{context.DeadlineExceeded}, OpCommit, false, true},
		{OpCommit, stageCommit, safeErr{}, OpCommit, true, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d/%v", tt.op, tt.st, tt.err), func(t *testing.T) {
			t.Parallel()
			e := interpretError(tt.op, tt.st, tt.err)
			require.Equal(t, tt.want, e.Op)
			require.Equal(t, tt.consumed, e.MayHaveConsumedQuota())
			require.Equal(t, tt.consumed, ports.MayHaveConsumedQuota(e))
			// A caller asking pgx whether to retry gets the store's
			// answer, not the driver's mark on the cause (safeErr's).
			require.Equal(t, !tt.consumed, pgconn.SafeToRetry(e))
			require.Equal(t, tt.timeout, e.Timeout)
			require.Equal(t, tt.timeout, errors.Is(e, ErrTimeout))
			require.Contains(t, e.Error(), tt.want)
			// The cause is kept as much as it is safe to: the store's own
			// errors and the context's as they are, a server error's code,
			// anything else's text.
			var pgErr *pgconn.PgError
			var dbErr *DatabaseError
			switch {
			case errors.As(tt.err, &pgErr):
				require.ErrorAs(t, e, &dbErr)
				require.Equal(t, pgErr.Code, dbErr.Code)
				require.Equal(t, pgErr.Message, dbErr.Message)
			case tt.err == context.Canceled, tt.err == context.DeadlineExceeded, tt.err == ErrCommitOutcome, tt.err == errIncomplete:
				require.ErrorIs(t, e, tt.err)
			default:
				require.ErrorAs(t, e, &dbErr)
				require.Equal(t, tt.err.Error(), dbErr.Message)
			}
			for _, ctxErr := range []error{context.Canceled, context.DeadlineExceeded} {
				require.Equal(t, errors.Is(tt.err, ctxErr), errors.Is(e, ctxErr))
			}
		})
	}
}

func TestInterpretMaintenanceError(t *testing.T) {
	t.Parallel()
	serverErr := &pgconn.PgError{Code: "P0001", Message: "injected"}
	tests := []struct {
		st      stage
		err     error
		removed bool
	}{
		{stageOpen, context.DeadlineExceeded, false},
		{stageBeforeCommit, serverErr, false},
		{stageBeforeCommit, io.ErrUnexpectedEOF, true},
		{stageCommit, serverErr, true},
		{stageCommit, unsentErr{context.Canceled}, false},
		{stageCommit, safeErr{}, true},
	}
	for _, tt := range tests {
		e := interpretMaintenanceError(opCleanup, tt.st, tt.err)
		require.Equal(t, tt.removed, e.MayHaveRemovedRows(), "%d %v", tt.st, tt.err)
		require.Equal(t, !tt.removed, pgconn.SafeToRetry(e), "%d %v", tt.st, tt.err)
		require.False(t, ports.MayHaveConsumedQuota(e))
	}
	require.Contains(t, interpretMaintenanceError(opStats, stageOpen, io.EOF).Error(), "nothing changed")
}

// A caller who gave up is answered by the same rule: quota may have been
// consumed only once COMMIT had been sent, and for a cleanup, rows removed.
func TestCallerWhoLeftIsAnsweredByTheRule(t *testing.T) {
	t.Parallel()
	for _, committing := range []bool{false, true} {
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
		defer cancel()
		for _, ctx := range []context.Context{cancelled, expired} {
			require.Equal(t, committing, mayHaveCommitted(leftStage(committing), ctx.Err()))
			e := leftError(ctx, outcome{left: true, step: OpLock, committing: committing})
			require.Equal(t, committing, e.MayHaveConsumedQuota(), "%v, committing %v", ctx.Err(), committing)
			require.Equal(t, ctx == expired, e.Timeout)
		}
	}
	require.False(t, interpretMaintenanceError(opStats, stageCommit, io.EOF).MayHaveRemovedRows(), "a stats read removes nothing")
}

// A serialization failure the server reported as an ERROR is a race the
// optimistic protocol lost, wherever it was met: the read's, a write
// statement's, or the implicit COMMIT's (the pre-commit check of
// serializable isolation, which runs before the commit record): nothing was
// committed. Every other error, a deadlock, a lock timeout or a FATAL
// carrying the same code included, is not.
func TestLostRace(t *testing.T) {
	t.Parallel()
	serialization := &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "40001",
		Message: "could not serialize access due to read/write dependencies among transactions"}
	localized := &pgconn.PgError{Severity: "ERROR", Code: "40001", Message: "could not serialize access due to concurrent update"}
	fatal := &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "40001", Message: "terminating connection"}
	deadlock := &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "40P01", Message: "deadlock detected"}
	lockTimeout := &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "55P03", Message: "canceling statement due to lock timeout"}
	for _, tc := range []struct {
		err  error
		lost bool
	}{
		{serialization, true},
		{localized, true},
		{fmt.Errorf("write: %w", serialization), true},
		{fatal, false},
		{deadlock, false},
		{lockTimeout, false},
		{io.ErrUnexpectedEOF, false},
		{nil, false},
	} {
		require.Equal(t, tc.lost, lostRace(tc.err), "%v", tc.err)
	}
}
