package runlimitfx_test

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// testSecret is the key secret tests put in the environment.
const testSecret = "app-test-secret-of-at-least-32-bytes"

var envSeq atomic.Int64

// setEnv puts value in an environment variable of the test's own and
// returns its name. Unlike t.Setenv it allows t.Parallel: no two tests share
// a variable.
func setEnv(t *testing.T, value string) string {
	t.Helper()
	name := "RUNLIMIT_APP_TEST_" + strconv.FormatInt(envSeq.Add(1), 10)
	require.NoError(t, os.Setenv(name, value))
	t.Cleanup(func() { _ = os.Unsetenv(name) })
	return name
}

// memoryConfig returns a memory-backend config whose secret is set.
func memoryConfig(t *testing.T) wiring.Config {
	t.Helper()
	return wiring.Config{
		Memory:    memory.Config{MaxKeys: 100, Shards: 4},
		KeySecret: wiring.NewSecret(testSecret),
	}
}

// hostStore is a host's own store: a memory store behind the port, with
// every optional capability, counting its Close calls.
type hostStore struct {
	*memory.Store
	closes atomic.Int32
}

func newHostStore(t *testing.T) *hostStore {
	t.Helper()
	inner, err := memory.New(memory.Config{MaxKeys: 100})
	require.NoError(t, err)
	t.Cleanup(func() { _ = inner.Close() })
	return &hostStore{Store: inner}
}

// Close counts the call and leaves the memory store open, so that a test
// can tell a closed host store from one the module left alone.
func (s *hostStore) Close() error {
	s.closes.Add(1)
	return nil
}

// loginPolicy allows 2 checks a minute.
func loginPolicy(t *testing.T, id string) domain.Policy {
	t.Helper()
	p, err := domain.ParsePolicy(id, "identity", 2, time.Minute)
	require.NoError(t, err)
	return p
}

// check applies a check of p for subject through l, requiring no error.
func check(t *testing.T, l *app.Limiter, h domain.KeyHasher, p domain.Policy, subject string) domain.Decision {
	t.Helper()
	d, err := l.Check(context.Background(), domain.NewCheck(p, h.KeyString(p, subject)))
	require.NoError(t, err)
	return d
}

// idlePool returns a pool that never connects (nothing listens on port 1):
// for code that only looks at whether a pool is given, or must not use it.
func idlePool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pc, err := pgxpool.ParseConfig("postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// countRows counts the counters stored in db.
func countRows(t *testing.T, db *pgtest.Database) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM runlimit_fixed_windows").Scan(&n))
	return n
}
