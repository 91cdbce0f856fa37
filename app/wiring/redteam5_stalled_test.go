package wiring_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/runlimit/runlimit/app/wiring"
)

// failSafe bounds how long a test waits for what must happen; reaching
// it fails the test, it is not a measure of speed.
const failSafe = 30 * time.Second

// stalledServer accepts connections and never answers them, as a
// database host whose server hangs does.
func stalledServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// TestMigrateOnAStalledServerFailsWithinTheStoresBudget: a server that
// accepts connections and never answers (a hung host) fails a Start
// without a deadline of its own, migration or not, within the store's
// connection budget (AcquireTimeout), rather than holding it for ever:
// the migrator's connection is bounded as the pool's are. Nothing is
// left running, and the error holds no password.
func TestMigrateOnAStalledServerFailsWithinTheStoresBudget(t *testing.T) {
	const password = "pw-hunter2-stalled"
	for _, migrate := range []bool{false, true} {
		addr := stalledServer(t)
		before := goleak.IgnoreCurrent()
		cfg := wiring.Config{Backend: wiring.BackendPostgres,
			DatabaseURL: wiring.NewSecret("postgres://u:" + password + "@" + addr + "/db"), Migrate: migrate,
			KeySecret: wiring.NewSecret(testSecret)}
		cfg.Postgres.AcquireTimeout = 100 * time.Millisecond
		done := make(chan error, 1)
		go func() {
			_, err := wiring.Open(context.Background(), cfg)
			done <- err
		}()
		select {
		case err := <-done:
			require.Error(t, err)
			require.NotContains(t, err.Error(), password)
		case <-time.After(failSafe):
			t.Fatalf("Open (migrate %v) waited for a stalled server past the store's budget", migrate)
		}
		goleak.VerifyNone(t, before)
	}
}
