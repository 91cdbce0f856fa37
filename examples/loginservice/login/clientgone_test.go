package login_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/examples/loginservice/login"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// TestClientGoneDuringCheck: a client sends a login and disconnects while
// the shared quota is checked (the database is slow: another transaction
// holds the table). Its request's context ends, the check is cancelled
// before anything is consumed, and the refusal goes to nobody. That is no
// failure of the service: it was logged at error level, as a store
// failure is, so that any client could raise the records an operator is
// paged on, one per request. It is logged at debug level, as a denial is,
// and says the client went away; the next login finds the client's and
// the identity's quota untouched, and the pool still serves.
func TestClientGoneDuringCheck(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	clock := memory.NewManualClock()
	s := startOn(t, postgresConfig(clock, db.URL), listen(t), clock, false)
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "LOCK TABLE runlimit_fixed_windows IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	s.note(login.DemoIdentity, login.DemoPassword)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	require.NoError(t, err)
	form := url.Values{"identity": {login.DemoIdentity}, "password": {login.DemoPassword}}.Encode()
	_, err = fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: login.test\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", len(form), form)
	require.NoError(t, err)
	// The guard's check waits for the table: the body has been read, so
	// the server watches the connection and cancels the request when it
	// closes.
	require.Eventually(t, func() bool {
		var waiting int
		err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&waiting)
		return err == nil && waiting > 0
	}, 20*time.Second, 5*time.Millisecond, "the check waits for the lock")
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { return len(s.logs.records("login: request refused")) == 1 }, 20*time.Second, 5*time.Millisecond)
	require.NoError(t, tx.Rollback(ctx))

	record := s.logs.records("login: request refused")[0]
	require.Contains(t, record, `"level":"DEBUG"`, record)
	require.Contains(t, record, `"client_gone":true`, record)
	require.Contains(t, record, `"may_have_consumed":false`, record)
	var rows int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM runlimit_fixed_windows").Scan(&rows))
	require.Zero(t, rows, "the cancelled check consumed nothing")
	s.expect(s.login("127.0.0.1", login.DemoIdentity, login.DemoPassword), want{
		status:    200,
		body:      okBody,
		rateLimit: list(trial(0, 60), client(5, 60), network(8, 60)),
		policy:    qAll,
	})
}
