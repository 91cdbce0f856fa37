package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/migrations"
)

type config struct {
	url           string
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
	name  string
	check checkFunc
	used  func(ctx context.Context) (sum, rows int64, err error)
}

type measurement struct {
	callers  int
	limiter  string
	rate     float64
	p50, p99 time.Duration
	// CPU per admission, of this process and of the local server (zero
	// when the server is not on this machine).
	clientCPU, serverCPU time.Duration
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	admin, err := pgxpool.New(ctx, cfg.url)
	if err != nil {
		return err
	}
	defer admin.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "runlimit_pgload_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = admin.Exec(dctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}()
	dbURL, err := withDatabase(cfg.url, name)
	if err != nil {
		return err
	}
	setupPool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer setupPool.Close()
	if err := migrations.MigratePool(ctx, setupPool, ""); err != nil {
		return err
	}
	if _, err := setupPool.Exec(ctx, sqlNaiveTable); err != nil {
		return err
	}
	hasher, err := domain.NewKeyHasher([]byte("pgload: a fixed secret of at least 32 bytes"))
	if err != nil {
		return err
	}

	var results []measurement
	for _, n := range cfg.callers {
		ms, err := measureCallers(ctx, cfg, dbURL, hasher, n, out)
		if err != nil {
			return err
		}
		results = append(results, ms...)
	}
	printTable(out, cfg, results)
	return nil
}

// measureCallers measures every limiter at n callers. The limiters take
// turns, cfg.rounds times each, so that load from elsewhere on the machine
// falls on all of them alike; they share one pool of n connections, used by
// one limiter at a time.
func measureCallers(ctx context.Context, cfg config, dbURL string, hasher domain.KeyHasher, n int, out io.Writer) ([]measurement, error) {
	pool, err := openPool(ctx, dbURL, n)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	limiters := make([]*limiter, len(cfg.limiters))
	totals := make([]tally, len(cfg.limiters))
	for i, kind := range cfg.limiters {
		if limiters[i], err = newLimiter(kind, pool, hasher, n, cfg.keysPerCaller); err != nil {
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
		ms[i] = totals[i].measurement(n, l.name)
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

func newLimiter(kind string, pool *pgxpool.Pool, hasher domain.KeyHasher, callers, keysPerCaller int) (*limiter, error) {
	cell := fmt.Sprintf("pgload.%s.c%d", kind, callers)
	if kind == "naive" {
		n := newNaive(pool, cell, callers, keysPerCaller)
		return &limiter{name: "naive one-statement upsert", check: n.check, used: n.used}, nil
	}
	pid, err := domain.NewPolicyID(cell)
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
	for c := range callers {
		for k := range keysPerCaller {
			checks[c] = append(checks[c], domain.NewCheck(p, hasher.KeyString(p, fmt.Sprintf("caller-%d/key-%d", c, k))))
		}
	}
	used := func(ctx context.Context) (sum, rows int64, err error) {
		err = pool.QueryRow(ctx, `SELECT COALESCE(sum(used), 0)::bigint, count(*) FROM runlimit_fixed_windows
			WHERE policy_id = $1`, cell).Scan(&sum, &rows)
		return sum, rows, err
	}
	if kind == "floor" {
		f := &floor{pool: pool, checks: checks}
		return &limiter{name: "protocol floor (row lock, write, commit)", check: f.check, used: used}, nil
	}
	if kind == "stepwise" {
		s := &stepwise{pool: pool, checks: checks, rowsPerShard: postgres.DefaultRowsPerShard, timeout: postgres.DefaultTimeout}
		return &limiter{name: "same protocol, one round trip per statement", check: s.check, used: used}, nil
	}
	store, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		return nil, err
	}
	// Through app.Limiter, as applications call the store: a single check
	// takes whatever path the limiter chooses for it.
	lim, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		return nil, err
	}
	check := func(ctx context.Context, caller, key int) (bool, error) {
		d, err := lim.Check(ctx, checks[caller][key])
		return d.Outcome() == domain.Allowed, err
	}
	return &limiter{name: "postgres.Store (pipelined)", check: check, used: used}, nil
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

func (t *tally) measurement(callers int, name string) measurement {
	all := slices.Clone(t.latencies)
	slices.Sort(all)
	n := time.Duration(len(all))
	m := measurement{
		callers:   callers,
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
	cpu0 := sampleCPU()
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
	cpu1 := sampleCPU()
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

func printTable(out io.Writer, cfg config, results []measurement) {
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
	fmt.Fprintln(out)
	byCallers := map[int]map[string]float64{}
	for _, m := range results {
		if byCallers[m.callers] == nil {
			byCallers[m.callers] = map[string]float64{}
		}
		byCallers[m.callers][strings.Fields(m.limiter)[0]] = m.rate
	}
	for _, m := range results {
		r := byCallers[m.callers]
		if !strings.HasPrefix(m.limiter, "postgres.Store") || r["naive"] == 0 || r["same"] == 0 {
			continue
		}
		fmt.Fprintf(out, "With %d callers the store runs at %.0f%% of the naive limiter's rate and %.1fx the one-round-trip-per-statement protocol's",
			m.callers, 100*m.rate/r["naive"], m.rate/r["same"])
		if f := r["protocol"]; f > 0 {
			fmt.Fprintf(out, "; the protocol floor runs at %.0f%% of the naive limiter's rate, and the store at %.0f%% of the floor's",
				100*f/r["naive"], 100*m.rate/f)
		}
		fmt.Fprintln(out, ".")
	}
}

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
