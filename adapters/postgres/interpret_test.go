package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// safeErr is an error pgconn would mark safe to retry: nothing was sent.
type safeErr struct{}

func (safeErr) Error() string     { return "not sent" }
func (safeErr) SafeToRetry() bool { return true }

func TestInterpretError(t *testing.T) {
	t.Parallel()
	serverErr := &pgconn.PgError{Code: "23505", Message: "duplicate key value violates unique constraint"}
	lockTimeout := &pgconn.PgError{Code: "55P03", Message: "canceling statement due to lock timeout"}
	stmtTimeout := &pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}
	idleTimeout := &pgconn.PgError{Code: "25P03", Message: "terminating connection due to idle-in-transaction timeout"}
	tests := []struct {
		op       string
		err      error
		consumed bool
		timeout  bool
	}{
		{OpAcquire, context.DeadlineExceeded, false, true},
		{OpAcquire, errors.New("closed pool"), false, false},
		{OpLock, lockTimeout, false, true},
		{OpLock, stmtTimeout, false, true},
		{OpLock, io.ErrUnexpectedEOF, false, false},
		{OpLock, context.Canceled, false, false},
		{OpLock, fmt.Errorf("read: %w", context.DeadlineExceeded), false, true},
		{OpEvaluate, &domain.CorruptCounterError{Index: 0}, false, false},
		{OpWrite, serverErr, false, false},
		{OpWrite, stmtTimeout, false, true},
		{OpWrite, idleTimeout, false, true},
		{OpCommit, serverErr, true, false},
		{OpCommit, context.DeadlineExceeded, true, true},
		{OpCommit, io.ErrUnexpectedEOF, true, false},
		{OpCommit, context.Canceled, true, false},
		{OpCommit, ErrCommitOutcome, true, false},
		{OpCommit, safeErr{}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.op+"/"+tt.err.Error(), func(t *testing.T) {
			t.Parallel()
			e := interpretError(tt.op, tt.err)
			require.Equal(t, tt.op, e.Op)
			require.Equal(t, tt.consumed, e.MayHaveConsumedQuota())
			require.Equal(t, tt.consumed, ports.MayHaveConsumedQuota(e))
			require.Equal(t, tt.timeout, e.Timeout)
			require.Equal(t, tt.timeout, errors.Is(e, ErrTimeout))
			require.Contains(t, e.Error(), tt.op)
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
			case tt.err == context.Canceled, tt.err == context.DeadlineExceeded, tt.err == ErrCommitOutcome:
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
		{stageCommit, safeErr{}, false},
	}
	for _, tt := range tests {
		e := interpretMaintenanceError(opCleanup, tt.st, tt.err)
		require.Equal(t, tt.removed, e.MayHaveRemovedRows(), "%d %v", tt.st, tt.err)
		require.False(t, ports.MayHaveConsumedQuota(e))
	}
	require.Contains(t, interpretMaintenanceError(opStats, stageOpen, io.EOF).Error(), "nothing changed")
}
