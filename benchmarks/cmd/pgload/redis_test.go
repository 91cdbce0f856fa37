package main

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// freeAddr returns a loopback address no server listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// With no Redis at the address, pgload starts one without persistence,
// says so, measures on it, and shuts it down at the end. The redis_rate
// contender counts every allowed check on its own key, and removes its
// keys.
func TestRedisRateOnAServerPgloadStarts(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server)")
	}
	ctx := context.Background()
	addr := freeAddr(t)
	var out strings.Builder
	srv, err := openRedis(ctx, addr, &out)
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			srv.close()
		}
	})
	require.True(t, srv.started)
	_, port, _ := net.SplitHostPort(addr)
	require.Contains(t, out.String(), `started redis-server --port `+port+` --bind 127.0.0.1 --save "" --appendonly no --daemonize yes`)
	require.Contains(t, srv.persistence, `save="" appendonly="no"`)

	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	r := newRedisRate(client, "test", 2, 3)
	_, rows, err := r.used(ctx)
	require.NoError(t, err)
	require.Zero(t, rows)
	// A key's first check anchors its TAT at the server's clock; from then
	// on readings count checks, as after pgload's warm-up.
	for c := range 2 {
		for k := range 3 {
			ok, err := r.check(ctx, c, k)
			require.NoError(t, err)
			require.True(t, ok)
		}
	}
	sum0, rows0, err := r.used(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(6), rows0, "one key per caller and key")
	// Caller c's key k gets c*3+k+1 more checks: 21 in all, each key a
	// count of its own.
	for c := range 2 {
		for k := range 3 {
			for range c*3 + k + 1 {
				ok, err := r.check(ctx, c, k)
				require.NoError(t, err)
				require.True(t, ok)
			}
		}
	}
	sum1, rows1, err := r.used(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(6), rows1)
	require.Equal(t, int64(21), sum1-sum0)
	one := r.keys[1][2]
	before, err := client.Get(ctx, redisKeyPrefix+one).Float64()
	require.NoError(t, err)
	ok, err := r.check(ctx, 1, 2)
	require.NoError(t, err)
	require.True(t, ok)
	after, err := client.Get(ctx, redisKeyPrefix+one).Float64()
	require.NoError(t, err)
	require.Equal(t, redisLimit.Period.Seconds(), after-before, "each check moves the key's TAT one period ahead")

	require.NoError(t, r.remove(ctx))
	_, rows2, err := r.used(ctx)
	require.NoError(t, err)
	require.Zero(t, rows2)

	srv.close()
	stopped = true
	require.Error(t, pingRedis(ctx, addr), "the server pgload started is gone")
}

// A server that answers is used as it is, and never shut down.
func TestOpenRedisUsesARunningServer(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server)")
	}
	ctx := context.Background()
	addr := freeAddr(t)
	first, err := openRedis(ctx, addr, &strings.Builder{})
	require.NoError(t, err)
	t.Cleanup(first.close)

	var out strings.Builder
	second, err := openRedis(ctx, addr, &out)
	require.NoError(t, err)
	require.False(t, second.started)
	require.Empty(t, out.String())
	second.close()
	require.NoError(t, pingRedis(ctx, addr), "closing a server pgload did not start leaves it running")
}

func TestPgloadStartsRedisOnlyOnThisMachine(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.2": true, "::1": true, "localhost": true,
		"192.0.2.1": false, "redis.example": false, "": false,
	} {
		require.Equal(t, want, isLoopback(host), host)
	}
}
