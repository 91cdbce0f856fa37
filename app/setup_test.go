package app_test

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
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
func memoryConfig(t *testing.T) app.Config {
	t.Helper()
	return app.Config{
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
