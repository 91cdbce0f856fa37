package wiring_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
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
		SecretEnv: setEnv(t, testSecret),
	}
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

// requireHasherOf requires that h derives the keys testSecret's hasher does,
// so that replicas sharing the secret share counters.
func requireHasherOf(t *testing.T, h domain.KeyHasher) {
	t.Helper()
	want, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	p := loginPolicy(t, "auth.login")
	require.Equal(t, want.KeyString(p, "user").Bytes(), h.KeyString(p, "user").Bytes())
}

// recorder is an Observer that keeps each event's limiter and outcome.
type recorder struct {
	mu     sync.Mutex
	events []seen
}

// seen is what a recorder keeps of an event.
type seen struct {
	limiter string
	outcome domain.Outcome
	err     error
}

func (r *recorder) ObserveAdmission(e app.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, seen{limiter: e.Limiter, outcome: e.Outcome, err: e.Err})
}

// take returns the events seen so far and forgets them.
func (r *recorder) take() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}
