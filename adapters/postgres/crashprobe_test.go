package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/migrations"
)

// The crash probe runs the store against a throwaway PostgreSQL cluster that
// it kills, restarts and whose backends it terminates. It never runs in the
// ordinary test run: it needs a cluster of its own, and it measures. Set
//
//	RUNLIMIT_CRASH_URL      a URL of the throwaway cluster (a superuser)
//	RUNLIMIT_CRASH_PIDFILE  its postmaster.pid
//	RUNLIMIT_CRASH_START    a shell command that starts it and waits
//	RUNLIMIT_CRASH_STOP     a shell command that stops it (fast mode)
//	RUNLIMIT_CRASH_TINY     optional: a small tmpfs directory the server
//	                        and this process may write, for disk-full
//
// and run go test ./adapters/postgres -run TestCrashProbe -v. The script
// adapters/postgres/testdata/crashprobe.sh sets up such a cluster and runs
// it. The report is logged; violations fail the test.
type crashEnv struct {
	url, pidfile, start, stop string
}

func crashEnvironment(t *testing.T) crashEnv {
	e := crashEnv{
		url: os.Getenv("RUNLIMIT_CRASH_URL"), pidfile: os.Getenv("RUNLIMIT_CRASH_PIDFILE"),
		start: os.Getenv("RUNLIMIT_CRASH_START"), stop: os.Getenv("RUNLIMIT_CRASH_STOP"),
	}
	if e.url == "" || e.pidfile == "" || e.start == "" || e.stop == "" {
		t.Skip("the crash probe needs RUNLIMIT_CRASH_URL, _PIDFILE, _START and _STOP (a throwaway cluster)")
	}
	return e
}

// killPostmaster sends SIGKILL to the cluster's postmaster.
func (e crashEnv) killPostmaster(t *testing.T) {
	b, err := os.ReadFile(e.pidfile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
}

// startServer starts the cluster, retrying while the killed one's backends
// still hold its shared memory.
func (e crashEnv) startServer(t *testing.T) {
	for i := 0; ; i++ {
		out, err := exec.Command("sh", "-c", e.start).CombinedOutput()
		if err == nil {
			return
		}
		require.Less(t, i, 100, "cannot restart the cluster: %s", out)
		time.Sleep(50 * time.Millisecond)
	}
}

func (e crashEnv) stopServer(t *testing.T) {
	out, err := exec.Command("sh", "-c", e.stop).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// waitUp returns when a fresh connection answers, and when that was.
func (e crashEnv) waitUp(t *testing.T, url string) time.Time {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			err = conn.Ping(ctx)
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the cluster did not come back")
	return time.Time{}
}

// probeGroup is one kind of caller: a protocol, a batch size and a
// deadline mode.
type probeGroup struct {
	name     string
	store    *postgres.Store
	pool     *pgxpool.Pool
	batch    int           // 1 or 2
	deadline time.Duration // 0: none
}

// probeAttempt is one admission of the probe.
type probeAttempt struct {
	group      int
	keys       []int // indexes into the run's checks
	start, end time.Time
	allowed    bool
	denied     bool
	err        error
}

// probeRun is one scenario's load: its checks, limits and attempts.
type probeRun struct {
	t        *testing.T
	groups   []*probeGroup
	checks   [][]domain.Check // per group, its keys
	limits   [][]int64
	mu       sync.Mutex
	attempts []probeAttempt
	stop     chan struct{}
	wg       sync.WaitGroup
}

const (
	probeKeys    = 8  // per group
	probeCallers = 3  // per group
	probeLow     = 40 // the limit of half the keys: reached during a run
	probeHigh    = 1_000_000
)

func newProbeRun(t *testing.T, hasher domain.KeyHasher, groups []*probeGroup, tag string) *probeRun {
	r := &probeRun{t: t, groups: groups, stop: make(chan struct{})}
	low := policy(t, "crash.low", probeLow, time.Hour)
	high := policy(t, "crash.high", probeHigh, time.Hour)
	for gi := range groups {
		var cs []domain.Check
		var ls []int64
		for k := range probeKeys {
			p, l := low, int64(probeLow)
			if k%2 == 1 {
				p, l = high, probeHigh
			}
			cs = append(cs, domain.NewCheck(p, hasher.KeyString(p, fmt.Sprintf("%s/%d/%d", tag, gi, k))))
			ls = append(ls, l)
		}
		r.checks = append(r.checks, cs)
		r.limits = append(r.limits, ls)
	}
	return r
}

// one runs one admission of group gi on keys.
func (r *probeRun) one(gi int, keys []int) probeAttempt {
	g := r.groups[gi]
	ctx := context.Background()
	var cancel context.CancelFunc = func() {}
	if g.deadline > 0 {
		ctx, cancel = context.WithTimeout(ctx, g.deadline)
	}
	defer cancel()
	a := probeAttempt{group: gi, keys: keys, start: time.Now()}
	if len(keys) == 1 {
		d, err := g.store.AdmitCheck(ctx, r.checks[gi][keys[0]])
		a.err = err
		if err == nil {
			a.allowed = d.Outcome() == domain.Allowed
			a.denied = !a.allowed
		}
	} else {
		checks := make([]domain.Check, len(keys))
		for i, k := range keys {
			checks[i] = r.checks[gi][k]
		}
		b, err := domain.NewBatch(checks, 0)
		require.NoError(r.t, err)
		a.err = g.store.Admit(ctx, b)
		if a.err == nil {
			d, err := b.Decision()
			require.NoError(r.t, err)
			a.allowed = d.Outcome() == domain.Allowed
			a.denied = !a.allowed
		}
	}
	a.end = time.Now()
	return a
}

// start starts every group's callers.
func (r *probeRun) start() {
	for gi, g := range r.groups {
		for c := range probeCallers {
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				n := c
				for {
					select {
					case <-r.stop:
						return
					default:
					}
					keys := []int{n % probeKeys}
					if g.batch == 2 {
						keys = append(keys, (n+1+c)%probeKeys)
						if keys[1] == keys[0] {
							keys[1] = (keys[0] + 1) % probeKeys
						}
					}
					n++
					a := r.one(gi, keys)
					r.mu.Lock()
					r.attempts = append(r.attempts, a)
					r.mu.Unlock()
				}
			}()
		}
	}
}

func (r *probeRun) finish() []probeAttempt {
	close(r.stop)
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.attempts)
}

// groupStats is what the probe reports of one group in one scenario.
type groupStats struct {
	attempts, allowed, denied, errs, mayConsumed, untyped int
	timeouts                                              int
	// Summed over the group's keys: admissions acknowledged, admissions
	// that may have been consumed, the stored used; and the keys whose
	// stored used is their limit.
	keysAcked, keysMaybe, keysStored int64
	atLimit                          int
}

// verify checks the run's accounting against the table and reports per
// group: every key's stored used lies between the admissions acknowledged
// as allowed and those plus the ones whose error said it may have been
// consumed, and never above its limit; every error is an
// *AdmissionError.
func (r *probeRun) verify(ctl *pgxpool.Pool, attempts []probeAttempt) []groupStats {
	t := r.t
	stats := make([]groupStats, len(r.groups))
	acked := make([][]int64, len(r.groups))
	maybe := make([][]int64, len(r.groups))
	for gi := range r.groups {
		acked[gi] = make([]int64, probeKeys)
		maybe[gi] = make([]int64, probeKeys)
	}
	for _, a := range attempts {
		s := &stats[a.group]
		s.attempts++
		switch {
		case a.allowed:
			s.allowed++
			for _, k := range a.keys {
				acked[a.group][k]++
			}
		case a.denied:
			s.denied++
		default:
			s.errs++
			var ae *postgres.AdmissionError
			if !errors.As(a.err, &ae) {
				s.untyped++
				t.Errorf("%s: untyped error %T: %v", r.groups[a.group].name, a.err, a.err)
				continue
			}
			if ae.Timeout {
				s.timeouts++
			}
			if ae.MayHaveConsumed {
				s.mayConsumed++
				for _, k := range a.keys {
					maybe[a.group][k]++
				}
			}
		}
	}
	for gi, g := range r.groups {
		for k, c := range r.checks[gi] {
			kb := c.CounterKey().Bytes()
			var used int64
			err := ctl.QueryRow(context.Background(),
				`SELECT used FROM runlimit_fixed_windows WHERE config_fingerprint = $1 AND subject_key = $2`,
				kb[:32], kb[32:]).Scan(&used)
			if errors.Is(err, pgx.ErrNoRows) {
				used = 0
			} else {
				require.NoError(t, err)
			}
			stats[gi].keysAcked += acked[gi][k]
			stats[gi].keysMaybe += maybe[gi][k]
			stats[gi].keysStored += used
			if used == r.limits[gi][k] {
				stats[gi].atLimit++
			}
			if used < acked[gi][k] {
				t.Errorf("%s key %d: LOST acknowledged admissions: stored %d, acknowledged %d (may-have-consumed %d)",
					g.name, k, used, acked[gi][k], maybe[gi][k])
			}
			if used > acked[gi][k]+maybe[gi][k] {
				t.Errorf("%s key %d: stored %d more than acknowledged %d + may-have-consumed %d",
					g.name, k, used, acked[gi][k], maybe[gi][k])
			}
			if used > r.limits[gi][k] {
				t.Errorf("%s key %d: stored %d over the limit %d", g.name, k, used, r.limits[gi][k])
			}
		}
	}
	return stats
}

// recovery reports, per group, how long after up the first answer (allowed
// or denied) of an attempt that started at or after up came, and how many
// attempts started more than a second after up failed.
func recovery(groups []*probeGroup, attempts []probeAttempt, up time.Time) (first []time.Duration, lateErrs, lateTimeouts, late []int) {
	first = make([]time.Duration, len(groups))
	lateErrs = make([]int, len(groups))
	lateTimeouts = make([]int, len(groups))
	late = make([]int, len(groups))
	for i := range first {
		first[i] = -1
	}
	for _, a := range attempts {
		if a.start.Before(up) {
			continue
		}
		if a.err == nil {
			if d := a.end.Sub(up); first[a.group] < 0 || d < first[a.group] {
				first[a.group] = d
			}
		}
		if a.start.After(up.Add(time.Second)) {
			late[a.group]++
			if a.err != nil {
				if errors.Is(a.err, postgres.ErrTimeout) {
					lateTimeouts[a.group]++
				} else {
					lateErrs[a.group]++
				}
			}
		}
	}
	return first, lateErrs, lateTimeouts, late
}

// errorKinds counts the errors of attempts by step and cause, and keeps
// one message of each kind.
func errorKinds(attempts []probeAttempt) (map[string]int, map[string]string) {
	kinds, samples := map[string]int{}, map[string]string{}
	for _, a := range attempts {
		var ae *postgres.AdmissionError
		if a.err == nil || !errors.As(a.err, &ae) {
			continue
		}
		cause := fmt.Sprintf("%T", ae.Err)
		var dbErr *postgres.DatabaseError
		if errors.As(ae.Err, &dbErr) {
			cause = "db:" + dbErr.Code
		}
		kind := fmt.Sprintf("%s/may=%v/timeout=%v/%s", ae.Op, ae.MayHaveConsumed, ae.Timeout, cause)
		kinds[kind]++
		samples[kind] = ae.Error()
	}
	return kinds, samples
}

// medians returns each group's median latency of answered attempts.
func medians(groups []*probeGroup, attempts []probeAttempt) []time.Duration {
	lat := make([][]time.Duration, len(groups))
	for _, a := range attempts {
		if a.err == nil {
			lat[a.group] = append(lat[a.group], a.end.Sub(a.start))
		}
	}
	out := make([]time.Duration, len(groups))
	for i, l := range lat {
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		out[i] = l[len(l)/2]
	}
	return out
}

func TestCrashProbe(t *testing.T) {
	env := crashEnvironment(t)
	ctx := context.Background()

	// A database of its own on the throwaway cluster.
	admin, err := pgx.Connect(ctx, env.url)
	require.NoError(t, err)
	dbName := fmt.Sprintf("crashprobe_%d", time.Now().UnixNano())
	_, err = admin.Exec(ctx, "CREATE DATABASE "+dbName)
	require.NoError(t, err)
	_ = admin.Close(ctx)
	dbURL := replaceDatabase(t, env.url, dbName)
	require.NoError(t, migrations.Migrate(ctx, mustConnConfig(t, dbURL), ""))

	ctl := openPool(t, dbURL, "crashctl", 2)
	hasher, err := domain.NewKeyHasher([]byte("runlimit crash probe secret, thirty-two bytes or more"))
	require.NoError(t, err)

	newGroups := func(t *testing.T) []*probeGroup {
		var groups []*probeGroup
		for _, proto := range []postgres.Protocol{postgres.Locked, postgres.Optimistic} {
			pool := openPool(t, dbURL, "crashstore", 8)
			store, err := postgres.New(pool, postgres.Config{Protocol: proto})
			require.NoError(t, err)
			for _, batch := range []int{1, 2} {
				for _, dl := range []bool{true, false} {
					g := &probeGroup{name: fmt.Sprintf("%s/batch%d/deadline=%v", proto, batch, dl), store: store, pool: pool, batch: batch}
					if dl {
						g.deadline = time.Hour // set from the warm median
					}
					groups = append(groups, g)
				}
			}
		}
		return groups
	}
	// calibrate runs the load for a while without deadlines and sets
	// deadlines of 5 times each group's warm median.
	calibrate := func(t *testing.T, groups []*probeGroup, tag string) {
		dls := make([]bool, len(groups))
		for i, g := range groups {
			dls[i] = g.deadline > 0
			g.deadline = 0
		}
		r := newProbeRun(t, hasher, groups, tag)
		r.start()
		time.Sleep(1500 * time.Millisecond)
		m := medians(groups, r.finish())
		for i, g := range groups {
			if dls[i] {
				g.deadline = 5 * m[i]
			}
			t.Logf("calibrate %-36s warm median %v deadline %v", g.name, m[i], g.deadline)
		}
	}
	report := func(t *testing.T, name string, r *probeRun, attempts []probeAttempt, up time.Time) {
		stats := r.verify(ctl, attempts)
		first, lateErrs, lateTimeouts, late := recovery(r.groups, attempts, up)
		for i, g := range r.groups {
			s := stats[i]
			t.Logf("%s %-36s attempts %5d allowed %5d denied %5d errors %4d (timeouts %4d, may-have-consumed %3d, untyped %d) first answer %v after up; from 1s after up: %d attempts, %d timeouts, %d other errors",
				name, g.name, s.attempts, s.allowed, s.denied, s.errs, s.timeouts, s.mayConsumed, s.untyped, first[i].Round(time.Microsecond), late[i], lateTimeouts[i], lateErrs[i])
			t.Logf("%s %-36s per key, summed: acknowledged %d, may-have-consumed %d, stored %d; keys at their limit %d of %d",
				name, g.name, s.keysAcked, s.keysMaybe, s.keysStored, s.atLimit, probeKeys)
			if first[i] < 0 {
				t.Errorf("%s %s: never served again after the server was up", name, g.name)
			}
		}
		kinds, samples := errorKinds(attempts)
		keys := slices.Sorted(maps.Keys(kinds))
		for _, k := range keys {
			t.Logf("%s error kind %-60s %5d, such as %q", name, k, kinds[k], samples[k])
		}
		checkLedger(t, ctl)
	}

	t.Run("steady", func(t *testing.T) {
		// No fault: the baseline of the deadline groups' timeouts.
		groups := newGroups(t)
		calibrate(t, groups, "steady-cal")
		r := newProbeRun(t, hasher, groups, "steady")
		up := time.Now()
		r.start()
		time.Sleep(3 * time.Second)
		report(t, "steady", r, r.finish(), up)
	})

	// Every store backend terminated: 10 times, 300 ms apart, then a
	// storm of 300 rounds 5 ms apart, which also strikes round trips 2
	// and COMMITs in flight and churns the pools' connections.
	for _, c := range []struct {
		name     string
		rounds   int
		interval time.Duration
	}{{"terminate", 10, 300 * time.Millisecond}, {"terminate-storm", 300, 5 * time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			groups := newGroups(t)
			calibrate(t, groups, c.name+"-cal")
			cl := startCleanup(t, groups[0].store, ctl, hasher, c.name, 2000)
			r := newProbeRun(t, hasher, groups, c.name)
			r.start()
			time.Sleep(500 * time.Millisecond)
			var killed int64
			began := time.Now()
			for range c.rounds {
				var n int64
				require.NoError(t, ctl.QueryRow(ctx,
					`SELECT count(pg_catalog.pg_terminate_backend(pid)) FROM pg_catalog.pg_stat_activity WHERE application_name = 'crashstore'`).Scan(&n))
				killed += n
				time.Sleep(c.interval)
			}
			up := time.Now()
			newBefore := poolNewConns(groups)
			time.Sleep(2 * time.Second)
			attempts := r.finish()
			cl.finish(c.name)
			t.Logf("%s: %d backends terminated in %d rounds over %v; new connections in the 2 s after: %d",
				c.name, killed, c.rounds, up.Sub(began), poolNewConns(groups)-newBefore)
			report(t, c.name, r, attempts, up)
		})
	}

	t.Run("kill9", func(t *testing.T) {
		groups := newGroups(t)
		calibrate(t, groups, "kill9-cal")
		for round := range 2 {
			cl := startCleanup(t, groups[0].store, ctl, hasher, fmt.Sprintf("kill9-%d", round), 4000)
			r := newProbeRun(t, hasher, groups, fmt.Sprintf("kill9-%d", round))
			r.start()
			time.Sleep(time.Second)
			killed := time.Now()
			env.killPostmaster(t)
			time.Sleep(300 * time.Millisecond)
			env.startServer(t)
			up := firstConnect(killed.Add(300*time.Millisecond), env.waitUp(t, dbURL))
			newBefore := poolNewConns(groups)
			time.Sleep(3 * time.Second)
			attempts := r.finish()
			cl.finish(fmt.Sprintf("kill9-%d", round))
			t.Logf("kill9 round %d: server down for %v; new connections in the 3 s after up: %d", round, up.Sub(killed), poolNewConns(groups)-newBefore)
			report(t, fmt.Sprintf("kill9-%d", round), r, attempts, up)
		}
	})

	t.Run("disk-full", func(t *testing.T) {
		// The probe's database lives in a tablespace on a small tmpfs
		// (RUNLIMIT_CRASH_TINY, writable by the server and by this
		// process), which the probe fills: tables and indexes cannot
		// grow, the WAL (in the cluster's own directory) still can.
		tiny := os.Getenv("RUNLIMIT_CRASH_TINY")
		if tiny == "" {
			t.Skip("RUNLIMIT_CRASH_TINY names no tmpfs directory for a tablespace")
		}
		admin, err := pgx.Connect(ctx, env.url)
		require.NoError(t, err)
		ts := fmt.Sprintf("crashtiny_%d", time.Now().UnixNano())
		require.NoError(t, os.MkdirAll(tiny+"/"+ts, 0o700))
		if os.Geteuid() == 0 {
			// The server runs as postgres (see testdata/crashprobe.sh).
			require.NoError(t, exec.Command("chown", "postgres", tiny+"/"+ts).Run())
		}
		_, err = admin.Exec(ctx, "CREATE TABLESPACE "+ts+" LOCATION '"+tiny+"/"+ts+"'")
		require.NoError(t, err)
		_, err = admin.Exec(ctx, "CREATE DATABASE "+ts+" TABLESPACE "+ts)
		require.NoError(t, err)
		_ = admin.Close(ctx)
		fullURL := replaceDatabase(t, env.url, ts)
		require.NoError(t, migrations.Migrate(ctx, mustConnConfig(t, fullURL), ""))
		fullCtl := openPool(t, fullURL, "crashctl", 2)

		groups := func() []*probeGroup {
			var groups []*probeGroup
			for _, proto := range []postgres.Protocol{postgres.Locked, postgres.Optimistic} {
				pool := openPool(t, fullURL, "crashstore", 8)
				store, err := postgres.New(pool, postgres.Config{Protocol: proto})
				require.NoError(t, err)
				for _, batch := range []int{1, 2} {
					for _, dl := range []time.Duration{50 * time.Millisecond, 0} {
						groups = append(groups, &probeGroup{name: fmt.Sprintf("%s/batch%d/deadline=%v", proto, batch, dl),
							store: store, pool: pool, batch: batch, deadline: dl})
					}
				}
			}
			return groups
		}()
		free := fill(t, tiny)
		r := newProbeRun(t, hasher, groups, "full")
		r.start()
		time.Sleep(2 * time.Second)
		free()
		up := time.Now()
		time.Sleep(2 * time.Second)
		attempts := r.finish()
		full := 0
		for _, a := range attempts {
			var dbErr *postgres.DatabaseError
			if errors.As(a.err, &dbErr) && dbErr.Code == "53100" {
				full++
			}
		}
		t.Logf("disk-full: %d attempts met disk_full (53100)", full)
		if full == 0 {
			t.Error("no attempt met a full disk: the probe tested nothing")
		}
		ctlSave := ctl
		ctl = fullCtl
		report(t, "disk-full", r, attempts, up)
		ctl = ctlSave
	})

	// Connections are cold (fresh pools) and their warm-ups wait on a
	// table lock when the server stops (fast shutdown), dies (kill -9) or
	// has every store backend terminated.
	for _, mode := range []string{"fast", "kill9", "terminate"} {
		t.Run("mid-warmup-"+mode, func(t *testing.T) {
			groups := newGroups(t)
			// The deadline groups' callers wait 200 ms, the others the
			// store's budget: the warm-ups wait on the lock either way.
			for _, g := range groups {
				if g.deadline > 0 {
					g.deadline = 200 * time.Millisecond
				}
			}
			lock, err := pgx.Connect(ctx, dbURL)
			require.NoError(t, err)
			_, err = lock.Exec(ctx, "BEGIN; LOCK TABLE runlimit_fixed_windows IN ACCESS EXCLUSIVE MODE")
			require.NoError(t, err)
			r := newProbeRun(t, hasher, groups, "warmup-"+mode)
			r.start()
			time.Sleep(400 * time.Millisecond)
			var waiting int64
			require.NoError(t, ctl.QueryRow(ctx,
				`SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE application_name = 'crashstore' AND wait_event_type = 'Lock'`).Scan(&waiting))
			t.Logf("mid-warmup-%s: %d store backends waiting on a lock at the fault", mode, waiting)
			if waiting == 0 {
				t.Error("no warm-up was waiting: the probe tested nothing")
			}
			faulted := time.Now()
			var up time.Time
			switch mode {
			case "fast":
				env.stopServer(t)
				down := time.Now()
				env.startServer(t)
				up = firstConnect(down, env.waitUp(t, dbURL))
			case "kill9":
				env.killPostmaster(t)
				time.Sleep(300 * time.Millisecond)
				env.startServer(t)
				up = firstConnect(faulted.Add(300*time.Millisecond), env.waitUp(t, dbURL))
			case "terminate":
				_, err := ctl.Exec(ctx,
					`SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE application_name = 'crashstore'`)
				require.NoError(t, err)
				// The lock goes with them: the server was never down.
				_, err = lock.Exec(ctx, "ROLLBACK")
				require.NoError(t, err)
				up = time.Now()
			}
			_ = lock.Close(context.Background())
			newBefore := poolNewConns(groups)
			time.Sleep(3 * time.Second)
			attempts := r.finish()
			t.Logf("mid-warmup-%s: server unavailable for %v; new connections in the 3 s after up: %d",
				mode, up.Sub(faulted), poolNewConns(groups)-newBefore)
			report(t, "warmup-"+mode, r, attempts, up)
		})
	}
}

// checkLedger checks that the capacity ledger matches the table.
func checkLedger(t *testing.T, ctl *pgxpool.Pool) {
	var bad int64
	require.NoError(t, ctl.QueryRow(context.Background(),
		`SELECT count(*) FROM runlimit_capacity_shards AS c
		 WHERE c.row_count <> (SELECT count(*) FROM runlimit_fixed_windows AS w
		   WHERE (get_byte(w.config_fingerprint, 0) # get_byte(w.subject_key, 0)) = c.capacity_shard)`).Scan(&bad))
	if bad != 0 {
		t.Errorf("the capacity ledger disagrees with the table on %d shards", bad)
	}
}

// cleanupLoad runs CleanupExpired in a loop over counters it expired.
type cleanupLoad struct {
	t                                         *testing.T
	ctl                                       *pgxpool.Pool
	before                                    int64
	calls, removed, errs, mayRemoved, untyped int
	kinds                                     map[string]int
	stop, done                                chan struct{}
}

const cleanupMax = 5

func expiredRows(t *testing.T, ctl *pgxpool.Pool) int64 {
	var n int64
	require.NoError(t, ctl.QueryRow(context.Background(),
		`SELECT count(*) FROM runlimit_fixed_windows WHERE window_expires_at <= pg_catalog.clock_timestamp()`).Scan(&n))
	return n
}

// startCleanup seeds n counters through store, expires them, and cleans up
// in a loop until finish.
func startCleanup(t *testing.T, store *postgres.Store, ctl *pgxpool.Pool, hasher domain.KeyHasher, tag string, n int) *cleanupLoad {
	ctx := context.Background()
	p := policy(t, "crash.seed", 1, time.Hour)
	for i := 0; i < n; i += 32 {
		var cs []domain.Check
		for j := range 32 {
			cs = append(cs, domain.NewCheck(p, hasher.KeyString(p, fmt.Sprintf("%s/seed/%d", tag, i+j))))
		}
		// A loaded machine may take longer than the store's budget: the
		// seed is retried (an allowed counter is 1 of 1, so a retry of
		// one that committed is denied and changes nothing).
		for try := 0; ; try++ {
			_, err := tryAdmit(ctx, store, cs...)
			if err == nil {
				break
			}
			require.Less(t, try, 10, "cannot seed: %v", err)
		}
	}
	_, err := ctl.Exec(ctx, `UPDATE runlimit_fixed_windows
		SET window_started_at = window_started_at - interval '3 hours', window_expires_at = window_expires_at - interval '3 hours'
		WHERE policy_id = 'crash.seed' AND window_expires_at > pg_catalog.clock_timestamp()`)
	require.NoError(t, err)
	c := &cleanupLoad{t: t, ctl: ctl, before: expiredRows(t, ctl), kinds: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			select {
			case <-c.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			removed, err := store.CleanupExpired(cctx, cleanupMax)
			cancel()
			c.calls++
			if err == nil {
				c.removed += removed
				continue
			}
			c.errs++
			var me *postgres.MaintenanceError
			if !errors.As(err, &me) {
				c.untyped++
				continue
			}
			if me.MayHaveRemoved {
				c.mayRemoved++
			}
			cause := fmt.Sprintf("%T", me.Err)
			var dbErr *postgres.DatabaseError
			if errors.As(me.Err, &dbErr) {
				cause = "db:" + dbErr.Code
			}
			c.kinds[fmt.Sprintf("may=%v/timeout=%v/%s", me.MayHaveRemoved, me.Timeout, cause)]++
		}
	}()
	return c
}

// finish stops the loop and checks that the rows it removed are the ones
// it reported, give or take those of calls that may have removed rows.
func (c *cleanupLoad) finish(name string) {
	close(c.stop)
	<-c.done
	t := c.t
	deleted := c.before - expiredRows(t, c.ctl)
	t.Logf("%s cleanup: %d calls, %d errors (may-have-removed %d, untyped %d), reported removed %d, actually removed %d, kinds %v",
		name, c.calls, c.errs, c.mayRemoved, c.untyped, c.removed, deleted, c.kinds)
	if c.untyped > 0 {
		t.Errorf("%s cleanup: %d untyped errors", name, c.untyped)
	}
	if deleted < int64(c.removed) || deleted > int64(c.removed+c.mayRemoved*cleanupMax) {
		t.Errorf("%s cleanup: removed %d rows, reported %d with %d calls that may have removed up to %d each",
			name, deleted, c.removed, c.mayRemoved, cleanupMax)
	}
}

// fill writes a file in dir until the file system is full, and returns
// how to remove it.
func fill(t *testing.T, dir string) func() {
	path := dir + "/filler"
	f, err := os.Create(path)
	require.NoError(t, err)
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	// Fill the last partial chunk's room too.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	_ = f.Close()
	return func() { require.NoError(t, os.Remove(path)) }
}

func poolNewConns(groups []*probeGroup) int64 {
	var n int64
	seen := map[*pgxpool.Pool]bool{}
	for _, g := range groups {
		if !seen[g.pool] {
			seen[g.pool] = true
			n += g.pool.Stat().NewConnsCount()
		}
	}
	return n
}

func replaceDatabase(t *testing.T, url, db string) string {
	i := strings.LastIndex(url, "/")
	require.Positive(t, i)
	rest := ""
	if q := strings.Index(url[i:], "?"); q >= 0 {
		rest = url[i+q:]
	}
	return url[:i+1] + db + rest
}

func mustConnConfig(t *testing.T, url string) *pgx.ConnConfig {
	c, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	return c
}

// connects records when the store's pools opened connections.
var connects struct {
	mu sync.Mutex
	at []time.Time
}

// firstConnect returns the first time a store pool connected after since,
// or up if that is earlier.
func firstConnect(since, up time.Time) time.Time {
	connects.mu.Lock()
	defer connects.mu.Unlock()
	for _, at := range connects.at {
		if at.After(since) && at.Before(up) {
			up = at
		}
	}
	return up
}

func openPool(t *testing.T, url, app string, maxConns int32) *pgxpool.Pool {
	c, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	c.ConnConfig.RuntimeParams["application_name"] = app
	c.MaxConns = maxConns
	c.AfterConnect = func(context.Context, *pgx.Conn) error {
		connects.mu.Lock()
		connects.at = append(connects.at, time.Now())
		connects.mu.Unlock()
		return nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), c)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}
