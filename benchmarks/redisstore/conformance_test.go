package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/conformance"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// TestConformance runs Runlimit's conformance suite against the store on
// the Redis server at RUNLIMIT_REDIS_ADDR (default 127.0.0.1:6379), each
// case under a random prefix of its own, and skips when nothing answers.
func TestConformance(t *testing.T) {
	t.Parallel()
	addr := os.Getenv("RUNLIMIT_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	open := func() *redis.Client {
		// ContextTimeoutEnabled lets a cancelled context end a call in
		// flight, as the suite's cancellation cases expect.
		return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	}
	client := open()
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		t.Skipf("no Redis at %s (set RUNLIMIT_REDIS_ADDR): %v", addr, err)
	}
	// Four partitions, so that the cases that aim keys at partitions run.
	const partitions = 4
	conformance.Run(t, func(t testing.TB, opts conformance.Options) conformance.Instance {
		prefix := fmt.Sprintf("runlimit-conformance:%016x:", rand.Uint64())
		t.Cleanup(func() { deletePrefix(t, client, prefix) })
		cfg := Config{
			Client: client, Prefix: prefix, Capacity: int64(opts.Capacity), MaxBatchSize: opts.MaxBatchSize,
			Partitions: partitions,
		}
		store, err := New(cfg)
		require.NoError(t, err)
		return conformance.Instance{
			Store:       store,
			PartitionOf: store.PartitionOf,
			Advance: func(t testing.TB, d time.Duration) {
				advance(t, store, d)
			},
			OpenReplica: func(t testing.TB) ports.Store {
				c := open()
				t.Cleanup(func() { _ = c.Close() })
				cfg := cfg
				cfg.Client = c
				replica, err := New(cfg)
				require.NoError(t, err)
				return replica
			},
			Require: []conformance.Capability{
				conformance.CheckAdmitter, conformance.Cleaner, conformance.StatsReporter, conformance.Closer,
			},
		}
	})
}

// deletePrefix removes every key under prefix, and nothing else.
func deletePrefix(t testing.TB, client *redis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys, err := keysUnder(ctx, client, prefix)
	require.NoError(t, err)
	if len(keys) > 0 {
		require.NoError(t, client.Unlink(ctx, keys...).Err())
	}
}

// keysUnder lists the keys that start with prefix (which holds no glob
// character) with SCAN, which never blocks a shared server as KEYS does.
func keysUnder(ctx context.Context, client redis.UniversalClient, prefix string) ([]string, error) {
	seen := map[string]bool{}
	var keys []string
	it := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for it.Next(ctx) {
		// SCAN may return a key twice.
		if k := it.Val(); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys, it.Err()
}

// shiftScript: KEYS = for each counter, its key and its partition's
// index; ARGV = for each, its text read, its new text, its index entry
// read and its new one. It applies every change, or none when a counter
// changed since it was read.
var shiftScript = redis.NewScript(`
for i = 1, #KEYS, 2 do
  if redis.call('GET', KEYS[i]) ~= ARGV[i * 2 - 1] then
    return 0
  end
end
for i = 1, #KEYS, 2 do
  redis.call('SET', KEYS[i], ARGV[i * 2])
  redis.call('ZREM', KEYS[i + 1], ARGV[i * 2 + 1])
  redis.call('ZADD', KEYS[i + 1], 0, ARGV[i * 2 + 2])
end
return 1
`)

// advance moves store's time forward by d by moving every stored window
// under its prefix back by d, in one script that applies only if no
// counter changed since it was read (the arithmetic is Go's: Lua's
// float64 would round times near 10^18).
func advance(t testing.TB, store *Store, d time.Duration) {
	require.GreaterOrEqual(t, d, time.Duration(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shift := domain.InstantOf(d)
	for {
		keys, err := keysUnder(ctx, store.client, store.counter)
		require.NoError(t, err)
		if len(keys) == 0 {
			return
		}
		values, err := store.client.MGet(ctx, keys...).Result()
		require.NoError(t, err)
		var script []string
		var args []any
		for i, v := range values {
			text, ok := v.(string)
			if !ok {
				continue // removed since it was listed
			}
			c, ok := parseCounter(text)
			require.True(t, ok, "corrupt counter")
			raw := keys[i][len(store.counter):]
			moved := domain.Counter{Used: c.Used, Start: c.Start - shift, Expires: c.Expires - shift}
			require.Positive(t, int64(moved.Start), "time moved before the store's epoch")
			script = append(script, keys[i], store.indexes[store.partitionOf(raw)])
			args = append(args, text, formatCounter(moved), member(c.Expires, raw), member(moved.Expires, raw))
		}
		ok, err := shiftScript.Run(ctx, store.client, script, args...).Int()
		require.NoError(t, err)
		if ok == 1 {
			return
		}
	}
}
