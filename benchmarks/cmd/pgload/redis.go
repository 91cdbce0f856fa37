package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// redisRate is what many services use instead of a database for a shared
// limit: go-redis/redis_rate, a GCRA limiter that runs as one Lua script
// per check on a Redis server, through a go-redis client with one
// connection per caller.
//
// It is not the store's equal, and the report says so: the state lives in
// the server's memory, durable only as far as the server's persistence
// settings go (pgload prints them), and the algorithm is a leaky bucket,
// not an anchored window.
type redisRate struct {
	client  *redis.Client
	limiter *redis_rate.Limiter
	keys    [][]string // per caller, per key, without the library's prefix
}

// redisLimit lets no benchmark check be denied and makes the stored state a
// counter: one event per hour with a burst of 2^30, so every allowed event
// moves the key's theoretical arrival time (TAT) exactly one hour ahead of
// where it was, while it stays ahead of the clock.
var redisLimit = redis_rate.Limit{Rate: 1, Period: time.Hour, Burst: 1 << 30}

// redisKeyPrefix is what redis_rate puts before every key.
const redisKeyPrefix = "rate:"

func newRedisRate(client *redis.Client, cell string, callers, keysPerCaller int) *redisRate {
	r := &redisRate{client: client, limiter: redis_rate.NewLimiter(client)}
	r.keys = make([][]string, callers)
	for c := range callers {
		for k := range keysPerCaller {
			r.keys[c] = append(r.keys[c], fmt.Sprintf("%s/caller-%d/key-%d", cell, c, k))
		}
	}
	return r
}

func (r *redisRate) check(ctx context.Context, caller, key int) (bool, error) {
	res, err := r.limiter.Allow(ctx, r.keys[caller][key], redisLimit)
	if err != nil {
		return false, err
	}
	return res.Allowed == 1, nil
}

// used reads every key's TAT in hours, rounded: each allowed event adds
// exactly one, so the difference of two sums counts the events between
// them.
func (r *redisRate) used(ctx context.Context) (sum, rows int64, err error) {
	err = r.eachChunk(func(keys []string) error {
		vals, err := r.client.MGet(ctx, keys...).Result()
		if err != nil {
			return err
		}
		for i, v := range vals {
			if v == nil {
				continue
			}
			s, ok := v.(string)
			tat, perr := strconv.ParseFloat(s, 64)
			if !ok || perr != nil {
				return fmt.Errorf("redis: key %s holds %v, not a TAT", keys[i], v)
			}
			sum += int64(math.Round(tat / redisLimit.Period.Seconds()))
			rows++
		}
		return nil
	})
	return sum, rows, err
}

// remove deletes the cell's keys.
func (r *redisRate) remove(ctx context.Context) error {
	return r.eachChunk(func(keys []string) error { return r.client.Del(ctx, keys...).Err() })
}

// eachChunk calls f with the cell's keys, prefixed as stored, 512 at a
// time.
func (r *redisRate) eachChunk(f func(keys []string) error) error {
	var chunk []string
	for _, ks := range r.keys {
		for _, k := range ks {
			chunk = append(chunk, redisKeyPrefix+k)
			if len(chunk) == 512 {
				if err := f(chunk); err != nil {
					return err
				}
				chunk = chunk[:0]
			}
		}
	}
	if len(chunk) > 0 {
		return f(chunk)
	}
	return nil
}
