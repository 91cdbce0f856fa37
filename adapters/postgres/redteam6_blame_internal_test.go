package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// blame makes a server timeout match context.DeadlineExceeded only when the
// caller's deadline set it and it struck once it could have: the server's
// statement or lock timeout, kept as a *DatabaseError or wrapped by a
// migrations check; never another server error, nor a timeout the budget
// set, nor one that struck before the caller's timeouts could have.
func TestBlameAttributesOnlyTheCallersServerTimeouts(t *testing.T) {
	t.Parallel()
	server := func(code string) error { return sanitize(&pgconn.PgError{Severity: "ERROR", Code: code, Message: "m"}) }
	past, future := time.Now().Add(-time.Second), time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name   string
		strike time.Time
		err    error
		want   bool
	}{
		{"statement timeout", past, &AdmissionError{Op: OpLock, Timeout: true, Err: server("57014")}, true},
		{"lock timeout", past, &MaintenanceError{Op: opReady, Timeout: true, Err: server("55P03")}, true},
		{"wrapped by a migrations check", past, &MaintenanceError{Op: opReady, Timeout: true, Err: fmt.Errorf("read: %w", server("57014"))}, true},
		{"set by the budget", time.Time{}, &MaintenanceError{Op: opReady, Timeout: true, Err: server("57014")}, false},
		{"before the caller's timeouts could strike", future, &AdmissionError{Op: OpLock, Timeout: true, Err: server("57014")}, false},
		{"idle in transaction timeout", past, &MaintenanceError{Op: opReady, Timeout: true, Err: server("25P03")}, false},
		{"another server error", past, &AdmissionError{Op: OpLock, Err: server("40P01")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ss := &session{strike: tc.strike}
			err := ss.blame(tc.err)
			require.Same(t, tc.err, err)
			require.Equal(t, tc.want, errors.Is(err, context.DeadlineExceeded), "%v", err)
			var dbErr *DatabaseError
			require.ErrorAs(t, err, &dbErr, "the server's error is still found")
		})
	}
	require.NoError(t, (&session{strike: past}).blame(nil))
}
