package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/migrations"
	"github.com/runlimit/runlimit/ports"
)

// The pooler probe runs the store through PgBouncer, in each of its pool
// modes, and measures what an operator would ask: does it admit exactly
// the limit, does it fail closed with an error that says why, does it
// churn connections, leave locks or transactions behind on server
// connections, and do its cancel requests reach the statement they mean.
// It never runs in the ordinary test run: it needs a PgBouncer of its own.
// Set
//
//	RUNLIMIT_POOLER_SERVER_URL  the PostgreSQL server, directly (a role that
//	                            may create databases), e.g.
//	                            postgres://postgres@127.0.0.1:5432/postgres
//	RUNLIMIT_POOLER_DATABASE    the database the probe creates and drops,
//	                            which PgBouncer's aliases point at
//	RUNLIMIT_POOLER_URLS        mode=URL pairs, comma-separated, for the
//	                            modes to probe (session, transaction,
//	                            statement), each a URL of a PgBouncer alias
//	                            of that database in that pool mode
//	RUNLIMIT_POOLER_ADMIN_URL   optional: PgBouncer's admin console, for
//	                            its view of the pools
//	RUNLIMIT_POOLER_SCENARIOS   optional: the scenarios to run, of
//	                            maintenance, one, load and cancel
//
// and run go test ./adapters/postgres -run TestPoolerProbe -v. The script
// adapters/postgres/testdata/poolerprobe.sh (make pooler-probe) starts such
// a PgBouncer and runs it. The report is logged; over-admission, a caller
// left without an answer, and locks or transactions left on the server
// fail the test.
type poolerEnv struct {
	server, database, admin string
	modes                   []string
	urls                    map[string]string
}

func poolerEnvironment(t *testing.T) poolerEnv {
	e := poolerEnv{
		server: os.Getenv("RUNLIMIT_POOLER_SERVER_URL"), database: os.Getenv("RUNLIMIT_POOLER_DATABASE"),
		admin: os.Getenv("RUNLIMIT_POOLER_ADMIN_URL"), urls: map[string]string{},
	}
	for pair := range strings.SplitSeq(os.Getenv("RUNLIMIT_POOLER_URLS"), ",") {
		mode, u, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok {
			e.modes = append(e.modes, mode)
			e.urls[mode] = u
		}
	}
	if e.server == "" || e.database == "" || len(e.modes) == 0 {
		t.Skip("the pooler probe needs RUNLIMIT_POOLER_SERVER_URL, _DATABASE and _URLS (a PgBouncer of its own; see make pooler-probe)")
	}
	return e
}

// directURL is the URL of the probe's database on the server itself.
func (e poolerEnv) directURL(t *testing.T) string {
	u, err := url.Parse(e.server)
	require.NoError(t, err)
	u.Path = "/" + e.database
	return u.String()
}

// createDatabase creates the probe's database and migrates it; it is
// dropped, with whatever PgBouncer still holds on it, when the test ends.
func (e poolerEnv) createDatabase(t *testing.T) *pgxpool.Pool {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, e.server)
	require.NoError(t, err)
	name := pgx.Identifier{e.database}.Sanitize()
	_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		if err != nil {
			t.Logf("dropping the probe's database %s: %v", e.database, err)
		}
		_ = admin.Close(ctx)
	})
	direct, err := pgxpool.New(ctx, e.directURL(t))
	require.NoError(t, err)
	t.Cleanup(direct.Close)
	require.NoError(t, migrations.MigratePool(ctx, direct, ""))
	return direct
}

func TestPoolerProbe(t *testing.T) {
	e := poolerEnvironment(t)
	direct := e.createDatabase(t)
	hasher, err := domain.NewKeyHasher([]byte("runlimit pooler probe, a secret of 32+ bytes"))
	require.NoError(t, err)
	for _, mode := range e.modes {
		t.Run(mode, func(t *testing.T) {
			p := &poolerProbe{env: e, mode: mode, direct: direct, hasher: hasher}
			p.run(t)
		})
	}
}

// poolerProbe is one pool mode's run.
type poolerProbe struct {
	env    poolerEnv
	mode   string
	direct *pgxpool.Pool
	hasher domain.KeyHasher
	pool   *pgxpool.Pool
	stores map[postgres.Protocol]*postgres.Store
	// admissions counts the admissions made, to weigh the connections
	// the pool opened against.
	admissions int
}

// poolerCallers is how many callers a scenario runs at once: more than
// the pgx pool's connections, which are more than PgBouncer's server
// connections per pool.
const (
	poolerCallers  = 24
	poolerMaxConns = 8
)

// poolerHang is how long the probe waits for a caller's answer before it
// calls the store hung: far beyond every timeout the store sets itself.
const poolerHang = 60 * time.Second

func (p *poolerProbe) run(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(p.env.urls[p.mode])
	require.NoError(t, err)
	cfg.MaxConns = poolerMaxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close) // when the probe stops early; Close is idempotent
	p.pool = pool
	p.stores = map[postgres.Protocol]*postgres.Store{}
	for _, proto := range []postgres.Protocol{postgres.Locked, postgres.Optimistic} {
		s, err := postgres.New(pool, postgres.Config{Protocol: proto})
		require.NoError(t, err)
		p.stores[proto] = s
	}
	t.Logf("%s: pgx MaxConns %d, %d callers per scenario; PgBouncer's database: %s",
		p.mode, poolerMaxConns, poolerCallers, p.adminRow(t, "SHOW DATABASES", "name", "pool_mode", "pool_size"))

	if p.want("maintenance") {
		p.maintenance(t, "maintenance (before)")
	}
	if p.want("one") {
		for _, proto := range []postgres.Protocol{postgres.Locked, postgres.Optimistic} {
			p.exactlyOne(t, proto, 1, 0)
			p.exactlyOne(t, proto, 1, 20*time.Millisecond)
		}
		p.exactlyOne(t, postgres.Locked, 2, 0)
	}
	if p.want("load") {
		for _, proto := range []postgres.Protocol{postgres.Locked, postgres.Optimistic} {
			p.load(t, proto, 0)
			p.load(t, proto, 3*time.Millisecond)
		}
	}
	if p.want("cancel") {
		p.cancel(t, false)
		p.cancel(t, true)
	}
	if p.want("maintenance") {
		p.maintenance(t, "maintenance (after)")
	}

	st := pool.Stat()
	t.Logf("%s: pgx opened %d connections for %d admissions", p.mode, st.NewConnsCount(), p.admissions)
	p.showPools(t, "before the pool closes")
	p.serverState(t, "with the pool open")
	pool.Close()
	p.settled(t)
}

// want reports whether the scenario is to run: all of them, unless
// RUNLIMIT_POOLER_SCENARIOS lists some (maintenance, one, load, cancel).
func (p *poolerProbe) want(scenario string) bool {
	list := os.Getenv("RUNLIMIT_POOLER_SCENARIOS")
	return list == "" || slices.Contains(strings.Split(list, ","), scenario)
}

// outcome of one admission.
type poolerResult struct {
	allowed, denied bool
	err             error
}

// tally counts a scenario's results.
type poolerTally struct {
	allowed, denied, errs, mayHaveConsumed, timeouts, pooler int
	kinds                                                    map[string]int
}

func (c *poolerTally) add(r poolerResult) {
	switch {
	case r.err != nil:
		c.errs++
		if ports.MayHaveConsumedQuota(r.err) {
			c.mayHaveConsumed++
		}
		if errors.Is(r.err, postgres.ErrTimeout) || errors.Is(r.err, context.DeadlineExceeded) {
			c.timeouts++
		}
		if errors.Is(r.err, postgres.ErrPooler) {
			c.pooler++
		}
		if c.kinds == nil {
			c.kinds = map[string]int{}
		}
		c.kinds[errorKind(r.err)]++
	case r.allowed:
		c.allowed++
	case r.denied:
		c.denied++
	}
}

func (c *poolerTally) merge(o poolerTally) {
	c.allowed += o.allowed
	c.denied += o.denied
	c.errs += o.errs
	c.mayHaveConsumed += o.mayHaveConsumed
	c.timeouts += o.timeouts
	c.pooler += o.pooler
	for k, n := range o.kinds {
		if c.kinds == nil {
			c.kinds = map[string]int{}
		}
		c.kinds[k] += n
	}
}

func (c *poolerTally) String() string {
	s := fmt.Sprintf("allowed %d, denied %d, errors %d (timeouts %d, may have consumed %d, ErrPooler %d)",
		c.allowed, c.denied, c.errs, c.timeouts, c.mayHaveConsumed, c.pooler)
	for _, k := range slices.Sorted(maps.Keys(c.kinds)) {
		s += fmt.Sprintf("\n\t\t%4d× %s", c.kinds[k], k)
	}
	return s
}

// checkSession fails the run when session pooling, which serves the
// store, met errors that say a pooler does not.
func (p *poolerProbe) checkSession(t *testing.T, label string, c *poolerTally) {
	if strings.HasPrefix(p.mode, "session") && c.pooler > 0 {
		t.Errorf("%s %s: %d errors matched ErrPooler under session pooling", p.mode, label, c.pooler)
	}
}

// errorKind is an error's text, shortened to what tells kinds apart: the
// hint of an error matching ErrPooler is left out.
func errorKind(err error) string {
	s := err.Error()
	if errors.Is(err, postgres.ErrPooler) {
		if i := strings.Index(s, "; "); i >= 0 {
			s = s[:i] + " [matches ErrPooler, with its hint]"
		}
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// admitAll runs n callers at once, caller i admitting checks(i) under its
// own context, and returns their results; a caller not answered within
// poolerHang fails the test.
func (p *poolerProbe) admitAll(t *testing.T, n int, store *postgres.Store, deadline time.Duration, checks func(i int) []domain.Check) []poolerResult {
	results := make(chan poolerResult, n)
	start := make(chan struct{})
	for i := range n {
		go func() {
			<-start
			ctx := context.Background()
			if deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, deadline)
				defer cancel()
			}
			results <- p.admitOnce(ctx, store, checks(i))
		}()
	}
	close(start)
	p.admissions += n
	out := make([]poolerResult, 0, n)
	hang := time.NewTimer(poolerHang)
	defer hang.Stop()
	for range n {
		select {
		case r := <-results:
			out = append(out, r)
		case <-hang.C:
			t.Fatalf("%s: %d of %d callers had no answer after %v: the store hangs", p.mode, n-len(out), n, poolerHang)
		}
	}
	return out
}

func (p *poolerProbe) admitOnce(ctx context.Context, store *postgres.Store, checks []domain.Check) poolerResult {
	if len(checks) == 1 {
		d, err := store.AdmitCheck(ctx, checks[0])
		if err != nil {
			return poolerResult{err: err}
		}
		return poolerResult{allowed: d.Outcome() == domain.Allowed, denied: d.Outcome() == domain.Denied}
	}
	b, err := domain.NewBatch(checks, 0)
	if err != nil {
		return poolerResult{err: err}
	}
	if err := store.Admit(ctx, b); err != nil {
		return poolerResult{err: err}
	}
	d, err := b.Decision()
	if err != nil {
		return poolerResult{err: err}
	}
	return poolerResult{allowed: d.Outcome() == domain.Allowed, denied: d.Outcome() == domain.Denied}
}

func (p *poolerProbe) policy(t *testing.T, name string, limit int64, window time.Duration) domain.Policy {
	return policy(t, fmt.Sprintf("pooler-%s-%s", p.mode, name), limit, window)
}

// exactlyOne has poolerCallers callers at once ask for one request of a
// 1-per-hour limit (batch checks, on as many keys, each callers' batch the
// same): exactly one may be admitted.
func (p *poolerProbe) exactlyOne(t *testing.T, proto postgres.Protocol, batch int, deadline time.Duration) {
	name := fmt.Sprintf("one-%v-b%d-d%v", proto, batch, deadline)
	pol := p.policy(t, name, 1, time.Hour)
	checks := make([]domain.Check, batch)
	for i := range checks {
		checks[i] = domain.NewCheck(pol, p.hasher.KeyString(pol, fmt.Sprintf("subject-%d", i)))
	}
	results := p.admitAll(t, poolerCallers, p.stores[proto], deadline, func(int) []domain.Check { return checks })
	var c poolerTally
	for _, r := range results {
		c.add(r)
	}
	used := p.storedUsed(t, checks)
	t.Logf("%s %s: 1 per hour, batch of %d, deadline %v: %v\n\t\tstored used %v",
		p.mode, proto, batch, deadline, &c, used)
	if c.allowed > 1 {
		t.Errorf("%s %s: OVER-ADMISSION: %d callers admitted under a limit of 1", p.mode, proto, c.allowed)
	}
	p.checkSession(t, name, &c)
	p.checkAccounted(t, name, c, used, 1)
}

// load has poolerCallers callers each make 10 admissions, single checks
// and batches of two, on 4 keys with a limit of 20 per hour each.
func (p *poolerProbe) load(t *testing.T, proto postgres.Protocol, deadline time.Duration) {
	const keys, limit, rounds = 4, 20, 10
	name := fmt.Sprintf("load-%v-d%v", proto, deadline)
	pol := p.policy(t, name, limit, time.Hour)
	all := make([]domain.Check, keys)
	for i := range all {
		all[i] = domain.NewCheck(pol, p.hasher.KeyString(pol, fmt.Sprintf("subject-%d", i)))
	}
	var c poolerTally
	for round := range rounds {
		results := p.admitAll(t, poolerCallers, p.stores[proto], deadline, func(i int) []domain.Check {
			k := (i + round) % keys
			if i%3 == 0 {
				return []domain.Check{all[k], all[(k+1)%keys]}
			}
			return []domain.Check{all[k]}
		})
		for _, r := range results {
			c.add(r)
		}
	}
	used := p.storedUsed(t, all)
	var total int64
	for _, u := range used {
		total += u
		if u > limit {
			t.Errorf("%s %s: OVER-ADMISSION: a key stored %d under a limit of %d", p.mode, proto, u, limit)
		}
	}
	t.Logf("%s %s: %d keys × %d per hour, %d rounds of %d callers (a third batches of 2), deadline %v: %v\n\t\tstored used %v",
		p.mode, proto, keys, limit, rounds, poolerCallers, deadline, &c, used)
	// Each allowed single check consumed 1 and each allowed batch 2:
	// allowed admissions can never exceed what the table holds.
	p.checkSession(t, name, &c)
	if int64(c.allowed) > total {
		t.Errorf("%s %s: %d admissions allowed, the table holds only %d uses", p.mode, proto, c.allowed, total)
	}
}

// checkAccounted checks that the table holds what the callers were told:
// every allowed admission is stored, and only admissions whose error says
// they may have consumed can account for more.
func (p *poolerProbe) checkAccounted(t *testing.T, name string, c poolerTally, used []int64, per int64) {
	for i, u := range used {
		if u > per {
			t.Errorf("%s %s: OVER-ADMISSION: key %d stored %d under a limit of %d", p.mode, name, i, u, per)
		}
		if u < int64(c.allowed) {
			t.Errorf("%s %s: key %d stored %d but %d admissions were allowed", p.mode, name, i, u, c.allowed)
		}
		if u > int64(c.allowed+c.mayHaveConsumed) {
			t.Errorf("%s %s: key %d stored %d, but only %d allowed and %d may have consumed", p.mode, name, i, u, c.allowed, c.mayHaveConsumed)
		}
	}
}

// storedUsed reads each check's stored use (0 without a row) directly.
func (p *poolerProbe) storedUsed(t *testing.T, checks []domain.Check) []int64 {
	out := make([]int64, len(checks))
	for i, c := range checks {
		k := c.CounterKey().Bytes()
		err := p.direct.QueryRow(context.Background(),
			`SELECT used FROM runlimit_fixed_windows WHERE config_fingerprint = $1 AND subject_key = $2`,
			k[:32], k[32:]).Scan(&out[i])
		if !errors.Is(err, pgx.ErrNoRows) {
			require.NoError(t, err)
		}
	}
	return out
}

// cancel has a caller wait for a key whose advisory lock another session
// holds, and give up: by cancelling its context (no deadline: only the
// store's cancel request can end the server's wait, whose timeouts the
// budget set) or at its deadline. Bystanders admit on other keys all the
// while, without deadlines: a cancel request that reached their backend
// would fail one of their statements with 57014. The probe then checks
// that the waiting backend stopped waiting.
func (p *poolerProbe) cancel(t *testing.T, deadline bool) {
	const rounds = 5
	ctx := context.Background()
	store := p.stores[postgres.Locked]
	pol := p.policy(t, fmt.Sprintf("cancel-%v", deadline), 1000, time.Hour)
	victim := domain.NewCheck(pol, p.hasher.KeyString(pol, "victim"))
	var (
		victims      poolerTally
		bystanders   poolerTally
		stillWaiting int
		reached      int // rounds whose victim waited for the lock on the server
		answered     []time.Duration
	)
	for round := range rounds {
		holder, err := p.direct.Acquire(ctx)
		require.NoError(t, err)
		tx, err := holder.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, "SELECT pg_catalog.pg_advisory_xact_lock($1)", postgres.AdvisoryLockID(victim.CounterKey()))
		require.NoError(t, err)

		stop := make(chan struct{})
		tallies := make([]poolerTally, 3)
		var wg sync.WaitGroup
		for b := range tallies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := domain.NewCheck(pol, p.hasher.KeyString(pol, fmt.Sprintf("bystander-%d-%d", round, b)))
				for {
					select {
					case <-stop:
						return
					default:
					}
					tallies[b].add(p.admitOnce(context.Background(), store, []domain.Check{c}))
				}
			}()
		}

		vctx, vcancel := context.WithCancel(ctx)
		if deadline {
			vctx, vcancel = context.WithTimeout(ctx, 200*time.Millisecond)
		}
		done := make(chan poolerResult, 1)
		var ended time.Time // written before done is sent
		began := time.Now()
		go func() {
			r := p.admitOnce(vctx, store, []domain.Check{victim})
			ended = time.Now()
			done <- r
		}()
		pid := p.waitForAdvisoryWaiter(t, holder.Conn().PgConn().PID())
		if pid != 0 {
			reached++
		}
		var gaveUp time.Time
		if !deadline {
			time.Sleep(50 * time.Millisecond)
			gaveUp = time.Now()
			vcancel()
		}
		var r poolerResult
		select {
		case r = <-done:
		case <-time.After(poolerHang):
			t.Fatalf("%s: a cancelled caller had no answer after %v", p.mode, poolerHang)
		}
		if deadline {
			gaveUp = began.Add(200 * time.Millisecond)
		}
		answered = append(answered, ended.Sub(gaveUp).Round(time.Millisecond))
		vcancel()
		victims.add(r)
		// The store settles within a second (its cancel acknowledgement
		// and settle budgets); give it that, then look at the backend.
		time.Sleep(1500 * time.Millisecond)
		if pid != 0 && p.waitingOnAdvisory(t, pid) {
			stillWaiting++
		}
		close(stop)
		wg.Wait()
		for _, c := range tallies {
			bystanders.merge(c)
			p.admissions += c.allowed + c.denied + c.errs
		}
		p.admissions++ // the victim's
		require.NoError(t, tx.Rollback(ctx))
		holder.Release()
	}
	how := "cancelled (no deadline)"
	if deadline {
		how = "deadline 200ms"
	}
	t.Logf("%s cancel, victim %s, %d rounds, %d of which reached the lock wait on the server: victim %v\n\t\tanswered after giving up in %v (negative: before); backends still waiting afterwards: %d\n\t\tbystanders: %v",
		p.mode, how, rounds, reached, &victims, answered, stillWaiting, &bystanders)
	p.checkSession(t, "cancel victims", &victims)
	p.checkSession(t, "cancel bystanders", &bystanders)
	if victims.allowed > 0 {
		t.Errorf("%s: a caller that gave up while its key was locked was admitted", p.mode)
	}
	if stillWaiting > 0 {
		t.Errorf("%s: %d backends still waited for the lock after their caller gave up", p.mode, stillWaiting)
	}
	for k := range bystanders.kinds {
		if strings.Contains(k, "57014") {
			t.Errorf("%s: a bystander's statement was cancelled: %s", p.mode, k)
		}
	}
}

// waitForAdvisoryWaiter returns the server pid of the backend, other than
// the holder's, that waits for an advisory lock in the probe's database, or
// 0 if none appears within a few seconds (a pool mode that never gets so
// far).
func (p *poolerProbe) waitForAdvisoryWaiter(t *testing.T, holder uint32) uint32 {
	for range 300 {
		var pid uint32
		err := p.direct.QueryRow(context.Background(),
			`SELECT pid FROM pg_catalog.pg_stat_activity
			 WHERE datname = pg_catalog.current_database() AND pid <> $1
			   AND wait_event_type = 'Lock' AND wait_event = 'advisory' LIMIT 1`, holder).Scan(&pid)
		if err == nil {
			return pid
		}
		require.ErrorIs(t, err, pgx.ErrNoRows)
		time.Sleep(10 * time.Millisecond)
	}
	return 0
}

func (p *poolerProbe) waitingOnAdvisory(t *testing.T, pid uint32) bool {
	var waiting bool
	require.NoError(t, p.direct.QueryRow(context.Background(),
		`SELECT EXISTS (SELECT FROM pg_catalog.pg_stat_activity
		 WHERE pid = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory')`, pid).Scan(&waiting))
	return waiting
}

// maintenance runs Ready, Stats and CleanupExpired through the pooler.
func (p *poolerProbe) maintenance(t *testing.T, label string) {
	store := p.stores[postgres.Locked]
	var c poolerTally
	for range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.add(poolerResult{allowed: true, err: store.Ready(ctx)})
		_, err := store.Stats(ctx)
		c.add(poolerResult{allowed: true, err: err})
		_, err = store.CleanupExpired(ctx, 100)
		c.add(poolerResult{allowed: true, err: err})
		cancel()
	}
	t.Logf("%s %s: Ready, Stats, CleanupExpired ×4: succeeded %d, %v", p.mode, label, c.allowed, &c)
	p.checkSession(t, label, &c)
}

// serverState logs, and fails on, what the probe's database holds on the
// server: advisory locks and transactions left open.
func (p *poolerProbe) serverState(t *testing.T, label string) {
	ctx := context.Background()
	var advisory, idleInTx, backends int
	require.NoError(t, p.direct.QueryRow(ctx,
		`SELECT count(*) FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_database d ON d.oid = l.database
		 WHERE l.locktype = 'advisory' AND d.datname = pg_catalog.current_database()`).Scan(&advisory))
	require.NoError(t, p.direct.QueryRow(ctx,
		`SELECT count(*) FILTER (WHERE state LIKE 'idle in transaction%'), count(*)
		 FROM pg_catalog.pg_stat_activity
		 WHERE datname = pg_catalog.current_database() AND pid <> pg_catalog.pg_backend_pid()`).Scan(&idleInTx, &backends))
	t.Logf("%s server state %s: backends on the database %d (every alias's server connections and the probe's direct pool), idle in transaction %d, advisory locks held %d",
		p.mode, label, backends, idleInTx, advisory)
	if advisory > 0 {
		t.Errorf("%s: %d advisory locks held on the server %s", p.mode, advisory, label)
	}
	if idleInTx > 0 {
		t.Errorf("%s: %d server connections idle in a transaction %s", p.mode, idleInTx, label)
	}
}

// settled waits for the server connections to calm down once the pool is
// closed and logs what remains: PgBouncer keeps its server connections,
// at most its pool size.
func (p *poolerProbe) settled(t *testing.T) {
	time.Sleep(500 * time.Millisecond)
	p.showPools(t, "after the pool closed")
	p.serverState(t, "after the pool closed")
}

// showPools logs PgBouncer's view of the mode's pool.
func (p *poolerProbe) showPools(t *testing.T, label string) {
	t.Logf("%s PgBouncer pool %s: %s", p.mode, label, p.adminRow(t, "SHOW POOLS", "database",
		"cl_active", "cl_waiting", "sv_active", "sv_idle", "sv_used", "sv_login"))
}

// adminRow runs show on PgBouncer's admin console and returns the columns
// named of the row whose key column names the mode's database, or "?"
// when there is no admin console.
func (p *poolerProbe) adminRow(t *testing.T, show, key string, columns ...string) string {
	if p.env.admin == "" {
		return "?"
	}
	cfg, err := pgx.ParseConfig(p.env.admin)
	require.NoError(t, err)
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Sprintf("(PgBouncer's admin console: %v)", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, show)
	require.NoError(t, err)
	defer rows.Close()
	u, err := url.Parse(p.env.urls[p.mode])
	require.NoError(t, err)
	alias := strings.TrimPrefix(u.Path, "/")
	out := "?"
	for rows.Next() {
		vals, err := rows.Values()
		require.NoError(t, err)
		row := map[string]any{}
		for i, f := range rows.FieldDescriptions() {
			row[f.Name] = vals[i]
		}
		if row[key] != alias {
			continue
		}
		var parts []string
		for _, c := range columns {
			parts = append(parts, fmt.Sprintf("%s %v", c, row[c]))
		}
		out = strings.Join(parts, ", ")
	}
	require.NoError(t, rows.Err())
	return out
}
