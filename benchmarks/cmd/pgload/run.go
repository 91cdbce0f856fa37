package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
	"github.com/runlimit/runlimit/benchmarks/report"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/migrations"
)

type config struct {
	url           string
	redisAddr     string
	csvPath       string
	duration      time.Duration
	callers       []int
	keysPerCaller int
	limiters      []string
	rounds        int
}

// checkFunc admits one check of caller's key-th key.
type checkFunc func(ctx context.Context, caller, key int) (allowed bool, err error)

// limiter is one contender in one cell: its check and a way to read back
// how much its keys have counted.
type limiter struct {
	id    string // as in the CSV: naive, stepwise, floor, store, optimistic, redis
	name  string
	check checkFunc
	used  func(ctx context.Context) (sum, rows int64, err error)
	// server is the command name of the server's processes, whose CPU is
	// charged to the limiter.
	server string
	// cleanup removes what the limiter stored outside the database pgload
	// drops; nil when there is nothing.
	cleanup func(ctx context.Context) error
}

type measurement struct {
	callers  int
	id       string
	limiter  string
	rate     float64
	p50, p99 time.Duration
	// CPU per admission, of this process and of the local server (zero
	// when the server is not on this machine).
	clientCPU, serverCPU time.Duration
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	name, dbURL, drop, err := createDatabase(ctx, cfg.url)
	if err != nil {
		return err
	}
	defer drop()
	setupPool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer setupPool.Close()
	if _, err := setupPool.Exec(ctx, sqlNaiveTable); err != nil {
		return err
	}
	hasher, err := domain.NewKeyHasher([]byte("pgload: a fixed secret of at least 32 bytes"))
	if err != nil {
		return err
	}
	var redisSrv *redisServer
	if slices.Contains(cfg.limiters, "redis") {
		if redisSrv, err = openRedis(ctx, cfg.redisAddr, out); err != nil {
			return err
		}
		defer redisSrv.close()
	}

	var results []measurement
	for _, n := range cfg.callers {
		ms, err := measureCallers(ctx, cfg, cell{dbURL: dbURL, run: name, hasher: hasher, callers: n}, out)
		if err != nil {
			return err
		}
		results = append(results, ms...)
	}
	printTable(out, cfg, results, redisSrv)
	if cfg.csvPath != "" {
		if err := writeCSV(cfg.csvPath, results); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nWrote %s.\n", cfg.csvPath)
	}
	return nil
}

// createDatabase creates a database of its own on the server adminURL
// points at, with Runlimit's schema, and returns its name, its URL and a
// function that drops it.
func createDatabase(ctx context.Context, adminURL string) (name, dbURL string, drop func(), err error) {
	admin, err := pgxpool.New(ctx, adminURL)
	if err != nil {
		return "", "", nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name = "runlimit_pgload_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		admin.Close()
		return "", "", nil, fmt.Errorf("create database: %w", err)
	}
	drop = func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = admin.Exec(dctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		admin.Close()
	}
	if dbURL, err = withDatabase(adminURL, name); err != nil {
		drop()
		return "", "", nil, err
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err == nil {
		err = migrations.MigratePool(ctx, pool, "")
		pool.Close()
	}
	if err != nil {
		drop()
		return "", "", nil, err
	}
	return name, dbURL, drop, nil
}

// cell is what every limiter of one caller count shares.
type cell struct {
	dbURL   string
	run     string // this run's name, unique on the servers
	hasher  domain.KeyHasher
	callers int
	pool    *pgxpool.Pool
	redis   *redis.Client // nil unless the redis limiter runs
}

// measureCallers measures every limiter at n callers. The limiters take
// turns, cfg.rounds times each, so that load from elsewhere on the machine
// falls on all of them alike; they share one pool of n connections, used by
// one limiter at a time.
func measureCallers(ctx context.Context, cfg config, c cell, out io.Writer) ([]measurement, error) {
	n := c.callers
	var err error
	if c.pool, err = openPool(ctx, c.dbURL, n); err != nil {
		return nil, err
	}
	defer c.pool.Close()
	if slices.Contains(cfg.limiters, "redis") {
		// As the PostgreSQL pool: one connection per caller, opened before
		// anything is timed.
		c.redis = redis.NewClient(&redis.Options{Addr: cfg.redisAddr, PoolSize: n, MinIdleConns: n})
		defer c.redis.Close()
	}
	limiters := make([]*limiter, len(cfg.limiters))
	totals := make([]tally, len(cfg.limiters))
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, l := range limiters {
			if l != nil && l.cleanup != nil {
				if err := l.cleanup(cctx); err != nil {
					fmt.Fprintf(out, "<!-- pgload: cleaning up after %s: %v -->\n", l.id, err)
				}
			}
		}
	}()
	for i, kind := range cfg.limiters {
		if limiters[i], err = newLimiter(kind, c, cfg.keysPerCaller); err != nil {
			return nil, err
		}
		if err := warmUp(ctx, limiters[i], n, cfg.keysPerCaller); err != nil {
			return nil, fmt.Errorf("%s with %d callers: warm-up: %w", kind, n, err)
		}
	}
	turn := cfg.duration / time.Duration(cfg.rounds)
	for round := range cfg.rounds {
		for i, l := range limiters {
			t, err := measure(ctx, l, n, cfg.keysPerCaller, turn)
			if err != nil {
				return nil, fmt.Errorf("%s with %d callers: %w", cfg.limiters[i], n, err)
			}
			totals[i].add(t)
			fmt.Fprintf(out, "<!-- round %d, %s, %d callers: %.0f/s -->\n", round+1, cfg.limiters[i], n, float64(len(t.latencies))/t.elapsed.Seconds())
		}
	}
	ms := make([]measurement, len(limiters))
	for i, l := range limiters {
		ms[i] = totals[i].measurement(n, l.id, l.name)
	}
	return ms, nil
}

func openPool(ctx context.Context, dbURL string, callers int) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = int32(callers)
	pc.MinConns = int32(callers)
	return pgxpool.NewWithConfig(ctx, pc)
}

// cellTag names a limiter's keys in one cell: the policy of its checks, or
// the prefix of its keys.
func cellTag(kind string, callers int) string { return fmt.Sprintf("pgload.%s.c%d", kind, callers) }

func newLimiter(kind string, c cell, keysPerCaller int) (*limiter, error) {
	pool, callers := c.pool, c.callers
	tag := cellTag(kind, callers)
	switch kind {
	case "naive":
		n := newNaive(pool, tag, callers, keysPerCaller)
		return &limiter{id: kind, name: "naive one-statement upsert", check: n.check, used: n.used, server: "postgres"}, nil
	case "redis":
		r := newRedisRate(c.redis, c.run+"."+tag, callers, keysPerCaller)
		return &limiter{id: kind, name: "go-redis/redis_rate (Redis, GCRA)", check: r.check, used: r.used,
			server: "redis-server", cleanup: r.remove}, nil
	}
	checks, err := cellChecks(c.hasher, tag, callers, keysPerCaller)
	if err != nil {
		return nil, err
	}
	used := func(ctx context.Context) (sum, rows int64, err error) {
		err = pool.QueryRow(ctx, `SELECT COALESCE(sum(used), 0)::bigint, count(*) FROM runlimit_fixed_windows
			WHERE policy_id = $1`, tag).Scan(&sum, &rows)
		return sum, rows, err
	}
	switch kind {
	case "floor":
		f := &floor{pool: pool, checks: checks}
		return &limiter{id: kind, name: "protocol floor (row lock, write, commit)", check: f.check, used: used, server: "postgres"}, nil
	case "stepwise":
		s := &stepwise{pool: pool, checks: checks, rowsPerShard: postgres.DefaultRowsPerShard, timeout: postgres.DefaultTimeout}
		return &limiter{id: kind, name: "same protocol, one round trip per statement", check: s.check, used: used, server: "postgres"}, nil
	}
	// "store" and "optimistic" are the two modes of one store, called
	// through app.Limiter as applications call it: a single check takes
	// whatever path the limiter chooses for it.
	cfg, name := postgres.Config{}, "postgres.Store, locked protocol (default)"
	if kind == "optimistic" {
		cfg.Protocol, name = postgres.Optimistic, "postgres.Store, optimistic protocol"
	}
	store, err := postgres.New(pool, cfg)
	if err != nil {
		return nil, err
	}
	lim, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		return nil, err
	}
	check := func(ctx context.Context, caller, key int) (bool, error) {
		d, err := lim.Check(ctx, checks[caller][key])
		return d.Outcome() == domain.Allowed, err
	}
	return &limiter{id: kind, name: name, check: check, used: used, server: "postgres"}, nil
}

// cellChecks returns, per caller, the checks of its keysPerCaller keys under
// a policy named tag whose limit no run reaches.
func cellChecks(hasher domain.KeyHasher, tag string, callers, keysPerCaller int) ([][]domain.Check, error) {
	pid, err := domain.NewPolicyID(tag)
	if err != nil {
		return nil, err
	}
	scope, err := domain.NewScopeID("caller")
	if err != nil {
		return nil, err
	}
	p, err := domain.NewPolicy(pid, scope, domain.MaxLimit, time.Hour)
	if err != nil {
		return nil, err
	}
	checks := make([][]domain.Check, callers)
	for i := range callers {
		for k := range keysPerCaller {
			checks[i] = append(checks[i], domain.NewCheck(p, hasher.KeyString(p, fmt.Sprintf("caller-%d/key-%d", i, k))))
		}
	}
	return checks, nil
}

// warmUp checks every key once, so that each has its row and each
// connection has prepared its statements before anything is timed.
func warmUp(ctx context.Context, l *limiter, callers, keysPerCaller int) error {
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keysPerCaller {
				if _, err := l.check(ctx, c, k); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// tally is what one or more timed turns of a limiter observed.
type tally struct {
	latencies  []time.Duration
	elapsed    time.Duration
	client     time.Duration // CPU of this process
	server     time.Duration // CPU of the local server, if found
	serverSeen bool
}

func (t *tally) add(o tally) {
	t.latencies = append(t.latencies, o.latencies...)
	t.elapsed += o.elapsed
	t.client += o.client
	t.server += o.server
	t.serverSeen = t.serverSeen || o.serverSeen
}

func (t *tally) measurement(callers int, id, name string) measurement {
	all := slices.Clone(t.latencies)
	slices.Sort(all)
	n := time.Duration(len(all))
	m := measurement{
		callers:   callers,
		id:        id,
		limiter:   name,
		rate:      float64(len(all)) / t.elapsed.Seconds(),
		p50:       all[len(all)*50/100],
		p99:       all[len(all)*99/100],
		clientCPU: t.client / n,
	}
	if t.serverSeen {
		m.serverCPU = t.server / n
	}
	return m
}

// measure lets every caller cycle through its own keys for d. It then
// checks that the keys it meant to hit are the keys that counted: one row
// per key, and every allowed check counted exactly once.
func measure(ctx context.Context, l *limiter, callers, keysPerCaller int, d time.Duration) (tally, error) {
	before, _, err := l.used(ctx)
	if err != nil {
		return tally{}, err
	}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	latencies := make([][]time.Duration, callers)
	allowed := make([]int64, callers)
	cpu0 := sampleCPU(l.server)
	start := time.Now()
	deadline := start.Add(d)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each caller has a context of its own, as each request of a
			// server has: callers sharing one context would contend on it
			// whenever a limiter derives a deadline from it.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			lat := make([]time.Duration, 0, 1<<12)
			for i := c; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				ok, err := l.check(ctx, c, i%keysPerCaller)
				lat = append(lat, time.Since(t0))
				if err != nil {
					errs <- err
					return
				}
				if ok {
					allowed[c]++
				}
			}
			latencies[c] = lat
		}()
	}
	wg.Wait()
	t := tally{elapsed: time.Since(start)}
	cpu1 := sampleCPU(l.server)
	close(errs)
	if err := <-errs; err != nil {
		return tally{}, err
	}

	after, rows, err := l.used(ctx)
	if err != nil {
		return tally{}, err
	}
	var total int64
	for c := range callers {
		t.latencies = append(t.latencies, latencies[c]...)
		total += allowed[c]
	}
	if want := int64(callers * keysPerCaller); rows != want {
		return tally{}, fmt.Errorf("the run touched %d rows, want %d (one per key)", rows, want)
	}
	if int64(len(t.latencies)) != total || after-before != total {
		return tally{}, fmt.Errorf("%d checks, %d allowed, but the keys counted %d", len(t.latencies), total, after-before)
	}
	t.client = cpu1.client - cpu0.client
	if cpu0.local && cpu1.local && cpu1.server > cpu0.server {
		t.server, t.serverSeen = cpu1.server-cpu0.server, true
	}
	return t, nil
}

func printTable(out io.Writer, cfg config, results []measurement, redisSrv *redisServer) {
	fmt.Fprintln(out)
	fmt.Fprintf(out, "%v per limiter and caller count, in %d interleaved rounds; %d keys per caller.\n\n",
		cfg.duration, cfg.rounds, cfg.keysPerCaller)
	fmt.Fprintln(out, "| callers | limiter | admissions/s | p50 | p99 | client CPU/op | server CPU/op |")
	fmt.Fprintln(out, "|---:|---|---:|---:|---:|---:|---:|")
	for _, m := range results {
		server := "n/a"
		if m.serverCPU > 0 {
			server = us(m.serverCPU)
		}
		fmt.Fprintf(out, "| %d | %s | %.0f | %s | %s | %s | %s |\n",
			m.callers, m.limiter, m.rate, ms(m.p50), ms(m.p99), us(m.clientCPU), server)
	}
	if redisSrv != nil {
		fmt.Fprintf(out, "\nRedis at %s, %s; its server CPU is that of every redis-server process.\n", redisSrv.addr, redisSrv.persistence)
	}
	fmt.Fprintln(out)
	report.WritePGRatios(out, csvRows(results))
}

// csvRows converts results to the rows of pgload's CSV.
func csvRows(results []measurement) []benchcsv.PGRow {
	rows := make([]benchcsv.PGRow, len(results))
	for i, m := range results {
		rows[i] = benchcsv.PGRow{
			Callers: m.callers, Contender: m.id, Label: m.limiter, Rate: m.rate,
			P50ms: millis(m.p50), P99ms: millis(m.p99), ClientCPUus: micros(m.clientCPU), ServerCPUus: math.NaN(),
		}
		if m.serverCPU > 0 {
			rows[i].ServerCPUus = micros(m.serverCPU)
		}
	}
	return rows
}

func writeCSV(path string, results []measurement) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := benchcsv.WritePG(f, csvRows(results)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// withDatabase points a URL or keyword/value connection string at database
// name.
func withDatabase(conn, name string) (string, error) {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			return "", err
		}
		u.Path = "/" + name
		q := u.Query()
		q.Del("dbname")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return conn + " dbname=" + name, nil
}
