package pgerror_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgerror"
)

// refusingPooler listens as PgBouncer does and refuses every connection
// the way PgBouncer refuses a startup parameter it does not track: a
// FATAL protocol violation naming the parameter, unquoted.
func refusingPooler(t *testing.T, message func(params map[string]string) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			be := pgproto3.NewBackend(conn, conn)
			if msg, err := be.ReceiveStartupMessage(); err == nil {
				if sm, ok := msg.(*pgproto3.StartupMessage); ok {
					be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "08P01", Message: message(sm.Parameters)})
					_ = be.Flush()
				}
			}
			_ = conn.Close()
		}
	}()
	return ln.Addr().String()
}

// A password that ends early in a connection string (an unencoded "&" in
// a URL's query, an unquoted space in keyword/value form) leaves its tail
// as a startup parameter's name. A server quotes that name as it refuses
// it, which Sanitize withholds; PgBouncer names it unquoted
// ("unsupported startup parameter: NAME"), which Sanitize printed.
func TestSanitizeWithholdsAParameterAPoolerRefuses(t *testing.T) {
	t.Parallel()
	const tail = "Wv7Lm2qTail"
	for _, form := range []string{"unsupported startup parameter: %s", "unsupported startup parameter in options: %s"} {
		addr := refusingPooler(t, func(params map[string]string) string {
			for name := range params {
				if name == tail {
					return fmt.Sprintf(form, name)
				}
			}
			return "no parameter to refuse"
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := pgconn.Connect(ctx, "postgres://u@"+addr+"/db?sslmode=disable&password=Kx4pQ&"+tail+"=1")
		cancel()
		require.Error(t, err)
		require.Contains(t, err.Error(), tail, "the driver's own error names the parameter")
		safe := pgerror.Sanitize(err)
		require.NotContains(t, safe.Error(), tail)
		require.Contains(t, safe.Error(), "unsupported startup parameter")
		require.Contains(t, safe.Error(), "(withheld: it came from the connection string")
		var e *pgerror.Error
		require.ErrorAs(t, safe, &e)
		require.NotContains(t, e.Message, tail)
		require.Equal(t, "08P01", e.Code)
	}
}
