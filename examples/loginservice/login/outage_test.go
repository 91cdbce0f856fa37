package login_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/examples/loginservice/login"
)

// TestDatabaseStopped: the database under the shared quota stops while
// the service runs. Every login, right password or wrong, is answered
// 503, never 200 or 401: the gate admitted it (its fields are known), the
// shared quota could not be asked (its fields are not), and there is no
// Retry-After. The readiness probe says 503 too. Once the database is
// back, logins succeed again, and the quotas show that the failed
// attempts consumed nothing: the client quota of their network, and the
// identity's quota of 3, which admits two more logins before it refuses.
func TestDatabaseStopped(t *testing.T) {
	t.Parallel()
	db := newCluster(t)
	clock := memory.NewManualClock()
	cfg := postgresConfig(clock, db.URL())
	cfg.Runtime.Migrate = true // a new cluster has no schema
	s := startOn(t, cfg, listen(t), clock, false)

	s.expect(s.login("127.0.0.2", login.DemoIdentity, login.DemoPassword), want{
		status:    200,
		body:      okBody,
		rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
		policy:    qAll,
	})
	s.expect(s.get("127.0.0.2", "/healthz"), want{status: 200, body: readyBody})

	db.stop()
	s.expect(s.login("127.0.0.2", login.DemoIdentity, login.DemoPassword), want{
		status:    503,
		body:      unavailableBody,
		rateLimit: list(trial(0, 60), network(8, 60)),
		policy:    qAll,
	})
	s.expect(s.login("127.0.0.3", login.DemoIdentity, "not-the-password"), want{
		status:    503,
		body:      unavailableBody,
		rateLimit: list(trial(1, 60), network(9, 60)),
		policy:    qAll,
	})
	s.expect(s.get("127.0.0.2", "/healthz"), want{status: 503, body: notReadyBody})
	refused := s.logs.records("login: request refused")
	require.Len(t, refused, 2)
	for _, r := range refused {
		require.Contains(t, r, `"level":"ERROR"`)
		require.Contains(t, r, `"reason":"limiter"`)
		require.Contains(t, r, `"may_have_consumed":false`)
	}
	require.Len(t, s.logs.records("login: not ready"), 1)

	db.start()
	// The pool may still hold sessions the stop ended; each probe that
	// meets one discards it. Wait, boundedly, for the probe to pass.
	s.awaitReady(50)
	s.expect(s.login("127.0.0.4", login.DemoIdentity, login.DemoPassword), want{
		status:    200,
		body:      okBody,
		rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
		policy:    qAll,
	})
	s.expect(s.login("127.0.0.2", login.DemoIdentity, login.DemoPassword), want{
		status:    200,
		body:      okBody,
		rateLimit: list(trial(0, 60), client(4, 60), network(7, 60)),
		policy:    qAll,
	})
	s.expect(s.login("127.0.0.3", login.DemoIdentity, login.DemoPassword), want{
		status:     429,
		body:       tooManyBody,
		rateLimit:  list(identity(0, 60), trial(0, 60), network(8, 60)),
		policy:     qAll,
		retryAfter: "60",
	})
}

// awaitReady probes GET /healthz until it answers 200, at most tries
// times, 100 ms apart.
func (s *service) awaitReady(tries int) {
	s.t.Helper()
	for range tries {
		r := s.get("127.0.0.2", "/healthz")
		if r.status == 200 {
			s.expect(r, want{status: 200, body: readyBody})
			return
		}
		s.expect(r, want{status: 503, body: notReadyBody})
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("GET /healthz did not answer 200 in %d tries", tries)
}

// TestDatabaseUnreachableAtStart: a service whose database does not
// answer does not start, so it never serves a login.
func TestDatabaseUnreachableAtStart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("opens a PostgreSQL connection; skipped under -short")
	}
	cfg := postgresConfig(memory.NewManualClock(), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", freePort(t)))
	ln := listen(t)
	defer ln.Close()
	app := fx.New(login.Options(cfg, ln), fx.NopLogger)
	require.NoError(t, app.Err())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := app.Start(ctx)
	var notReady *wiring.NotReadyError
	require.True(t, errors.As(err, &notReady), "start error: %v", err)
	require.Equal(t, "postgres", notReady.Store)
}
