package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is the Redis server of the redis contender: the one that
// answers at the configured address or, when none does and the address is
// on this machine, one that pgload starts without persistence and shuts
// down at the end.
type redisServer struct {
	addr    string
	started bool
	// persistence is the server's save and appendonly settings, printed
	// beside the results: a server that never writes to disk does less
	// than PostgreSQL's commit.
	persistence string
}

// startRedisArgs are the arguments pgload starts redis-server with, after
// --port and --bind.
var startRedisArgs = []string{"--save", "", "--appendonly", "no", "--daemonize", "yes"}

func openRedis(ctx context.Context, addr string, out io.Writer) (*redisServer, error) {
	s := &redisServer{addr: addr}
	if err := pingRedis(ctx, addr); err != nil {
		host, port, serr := net.SplitHostPort(addr)
		if serr != nil {
			return nil, fmt.Errorf("-redis-addr %q: %w", addr, serr)
		}
		if !isLoopback(host) {
			return nil, fmt.Errorf("no Redis answers at %s (%v), and pgload starts one only on a loopback address (leave the redis limiter out with -limiters)", addr, err)
		}
		path, lerr := exec.LookPath("redis-server")
		if lerr != nil {
			return nil, fmt.Errorf("no Redis answers at %s and redis-server is not installed (apt-get install redis-server, or leave the redis limiter out with -limiters): %w", addr, lerr)
		}
		args := append([]string{"--port", port, "--bind", host}, startRedisArgs...)
		if b, err := exec.CommandContext(ctx, path, args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("start redis-server: %w: %s", err, b)
		}
		s.started = true
		if err := waitForRedis(ctx, addr); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "<!-- pgload: no Redis answered at %s; started redis-server %s -->\n", addr, quoteArgs(args))
	}
	p, err := redisPersistence(ctx, addr)
	if err != nil {
		s.close()
		return nil, err
	}
	s.persistence = p
	return s, nil
}

// isLoopback reports whether host names this machine, where pgload may
// start a server.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func pingRedis(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

// waitForRedis polls a server that is starting until it answers, for up to
// ten seconds.
func waitForRedis(ctx context.Context, addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := pingRedis(ctx, addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server started but does not answer at %s: %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func redisPersistence(ctx context.Context, addr string) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	var parts []string
	for _, name := range []string{"save", "appendonly", "appendfsync"} {
		kv, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			return "", fmt.Errorf("redis CONFIG GET %s: %w", name, err)
		}
		parts = append(parts, fmt.Sprintf("%s=%q", name, kv[name]))
	}
	return strings.Join(parts, " "), nil
}

// close shuts down a server that pgload started, without saving.
func (s *redisServer) close() {
	if !s.started {
		return
	}
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// SHUTDOWN closes the connection before it can answer.
	if err := c.ShutdownNoSave(ctx).Err(); err != nil && !errors.Is(err, redis.Nil) && !isClosed(err) {
		fmt.Printf("<!-- pgload: shutting down the redis-server it started: %v -->\n", err)
	}
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "closed")
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" {
			a = `""`
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
