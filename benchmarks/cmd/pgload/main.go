// Command pgload measures Runlimit's PostgreSQL store against two baselines
// on the same server, side by side in one run: single-check admissions per
// second and p50/p99 latency at several counts of concurrent callers, each
// caller on keys of its own.
//
//   - naive: one INSERT ... ON CONFLICT DO UPDATE ... RETURNING per check,
//     the application's clock, no batches, no capacity bound;
//   - stepwise: the store's protocol (advisory lock, row lock, ledger read,
//     database clock, write, commit) with each statement its own round trip;
//   - floor: not a limiter but the part of the protocol no store can drop,
//     the row lock, the write and the commit in two pipelined round trips,
//     a ceiling for any store that keeps the protocol;
//   - store: postgres.Store in its default, locked protocol, through
//     app.Limiter.Check as applications call it: two pipelined round trips;
//   - optimistic: the same store in its optimistic mode
//     (postgres.Config.Protocol set to postgres.Optimistic), through
//     app.Limiter.Check too: a read without locks, then a conditional write
//     that applies only if the counter is unchanged;
//   - redis: go-redis/redis_rate on a Redis server, what many services use
//     instead. When no server answers at -redis-addr on this machine, pgload
//     starts one without persistence and shuts it down at the end.
//
// It works in a database of its own, created on the server and dropped at
// the end, and prints a markdown table; -csv writes the results for
// cmd/benchchart too.
//
//	go run ./cmd/pgload -database-url postgres://postgres@127.0.0.1:5432/postgres -csv pgload.csv
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	cfg := config{}
	flag.StringVar(&cfg.url, "database-url", defaultURL(),
		"server to measure on (a role that may CREATE DATABASE); default $RUNLIMIT_POSTGRES_TEST_DATABASE_URL or the local server")
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "measured time per limiter and caller count")
	flag.IntVar(&cfg.rounds, "rounds", 3, "turns each limiter takes, interleaved with the others, within -duration")
	callers := flag.String("callers", "1,8,32", "comma-separated counts of concurrent callers")
	flag.IntVar(&cfg.keysPerCaller, "keys-per-caller", 64, "distinct keys each caller cycles through")
	flag.StringVar(&cfg.redisAddr, "redis-addr", "127.0.0.1:6379", "Redis server of the redis limiter; started here when none answers")
	flag.StringVar(&cfg.csvPath, "csv", "", "also write the results to `file` as CSV")
	limiters := flag.String("limiters", strings.Join(allLimiters, ","), "comma-separated limiters to measure")
	cpuProfile := flag.String("cpuprofile", "", "write this process's CPU profile to `file`")
	flag.Parse()
	for _, s := range strings.Split(*limiters, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(allLimiters, s) {
			fmt.Fprintf(os.Stderr, "pgload: -limiters: unknown limiter %q\n", s)
			os.Exit(2)
		}
		cfg.limiters = append(cfg.limiters, s)
	}
	for _, s := range strings.Split(*callers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "pgload: -callers: %q is not a positive count\n", s)
			os.Exit(2)
		}
		cfg.callers = append(cfg.callers, n)
	}
	if cfg.keysPerCaller < 1 || cfg.duration <= 0 || cfg.rounds < 1 {
		fmt.Fprintln(os.Stderr, "pgload: -keys-per-caller, -duration and -rounds must be positive")
		os.Exit(2)
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pgload:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "pgload:", err)
			os.Exit(1)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, cfg, os.Stdout)
	stop()
	pprof.StopCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgload:", err)
		os.Exit(1)
	}
}

// allLimiters are the limiters pgload knows, in the order it measures them.
var allLimiters = []string{"naive", "stepwise", "floor", "store", "optimistic", "redis"}

func defaultURL() string {
	if u := os.Getenv("RUNLIMIT_POSTGRES_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}
