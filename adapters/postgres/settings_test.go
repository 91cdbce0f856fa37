package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/ports"
)

// serviceStore opens a store, configured by cfg, as a service role of its
// own on f's database, after set has given the role its settings (as an
// operator's ALTER ROLE ... SET does).
func (f *fixture) serviceStore(t *testing.T, cfg postgres.Config, set func(*pgtest.Role), configure func(*pgxpool.Config)) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	svc := f.db.NewServiceRole(t, "public")
	set(svc)
	pool := svc.NewPool(t, configure)
	store, err := postgres.New(pool, cfg)
	require.NoError(t, err)
	return store, pool
}

// requireUnsafeSetting requires err to report the unsafe setting name, as
// err's own type says: a failed admission that consumed nothing, or a
// failed maintenance operation that removed nothing.
func requireUnsafeSetting(t *testing.T, err error, name string) {
	t.Helper()
	require.ErrorIs(t, err, postgres.ErrUnsafeSetting)
	var se *postgres.SettingError
	require.ErrorAs(t, err, &se)
	require.Equal(t, name, se.Name)
	require.False(t, ports.MayHaveConsumedQuota(err))
	if me := (*postgres.MaintenanceError)(nil); errors.As(err, &me) {
		require.False(t, me.MayHaveRemoved)
		return
	}
	var ae *postgres.AdmissionError
	require.ErrorAs(t, err, &ae)
}

// A superuser may set session_replication_role for any role, and under
// replica the capacity ledger's triggers do not fire: new counters would
// take no slot, cleanup would free none, and the bound per shard would be
// gone. The store cannot set it back (only a superuser may), so it refuses
// such a session: Ready says why, every admission fails closed without
// consuming, and cleanup removes nothing; the ledger still matches the
// table.
func TestReplicaReplicationRoleIsRefused(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		ctx := context.Background()
		f := setup(t, e.cfg(postgres.Config{}))
		p := policy(t, "replica", 5, time.Hour)
		expired := f.check(p, "expired")
		requireAllowed(t, admit(t, f.store, expired))
		shift(t, f.db.Pool, 2*time.Hour)

		store, pool := f.serviceStore(t, e.cfg(postgres.Config{}), func(r *pgtest.Role) {
			f.db.SetRoleSetting(t, r, "session_replication_role", "replica")
		}, func(c *pgxpool.Config) { c.MaxConns = 1 })
		requireUnsafeSetting(t, store.Ready(ctx), "session_replication_role")
		opened := pool.Stat().NewConnsCount()
		checks := e.checks(f, p, "new")
		for range 2 {
			_, err := e.admit(ctx, store, checks)
			requireAdmissionError(t, err, postgres.OpAcquire, false)
			requireUnsafeSetting(t, err, "session_replication_role")
		}
		require.Equal(t, opened, pool.Stat().NewConnsCount(), "a refused connection was replaced")
		require.Equal(t, int32(1), pool.Stat().TotalConns())
		f.requireAbsent(t, checks)
		_, err := store.CleanupExpired(ctx, 10)
		requireUnsafeSetting(t, err, "session_replication_role")
		_, ok := f.stored(t, expired)
		require.True(t, ok, "cleanup removed a row")
		require.Equal(t, int64(1), f.ledger(t, postgres.ShardOf(expired.CounterKey())))
	})
}

// A search_path that names a schema before pg_catalog (set for the role,
// or the database, by whoever may) lets that schema's operators stand in
// for the built-ins the store's statements use: here an = on bytea that
// is always true, which would make the update of one counter write every
// counter. The store refuses such a session before it prepares anything
// there, so no counter changes.
func TestSearchPathBeforeTheCatalogIsRefused(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		ctx := context.Background()
		f := setup(t, e.cfg(postgres.Config{}))
		p := policy(t, "search.path", 5, time.Hour)
		bystander := f.check(p, "bystander")
		requireAllowed(t, admit(t, f.store, bystander))

		store, pool := f.serviceStore(t, e.cfg(postgres.Config{}), func(r *pgtest.Role) {
			f.db.PlantLookalikeEquals(t, r)
		}, nil)
		// The trap is set: the session's = on bytea is the look-alike.
		var same bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT '\x00'::bytea = '\x01'::bytea`).Scan(&same))
		require.True(t, same)

		requireUnsafeSetting(t, store.Ready(ctx), "search_path")
		checks := e.checks(f, p, "subject")
		for range 3 {
			_, err := e.admit(ctx, store, checks)
			requireAdmissionError(t, err, postgres.OpAcquire, false)
			requireUnsafeSetting(t, err, "search_path")
		}
		f.requireAbsent(t, checks)
		f.requireUsed(t, []domain.Check{bystander}, 1)
		shift(t, f.db.Pool, 2*time.Hour)
		_, err := store.CleanupExpired(ctx, 10)
		requireUnsafeSetting(t, err, "search_path")
		f.requireUsed(t, []domain.Check{bystander}, 1)
	})
}

// A connection new to the store, warmed while another session holds an
// ACCESS EXCLUSIVE lock on the counters table (an ALTER TABLE, a migration),
// waits for it no longer than an admission on a warm connection would: by
// the caller's deadline, or the operation's budget. The server's lock
// timeout ends the wait before it has prepared anything, so the admission
// fails as a timeout that consumed nothing and the connection stays in the
// pool, cold, rather than being closed when the budget runs out. Once the
// lock is gone, the same connection warms up and admits.
//
// Without a deadline the server's lock timeout strikes 250 ms before the
// 3 s budget ends (appendServerTimeout's largest margin; with a budget of
// 1 s it was 100 ms, which a loaded machine overran). A machine that keeps
// the server's answer from the client for longer still lets the budget end
// the wait on the client, which closes the connection as it must: the
// error says so (a client-side timeout with no SQLSTATE), and such an
// attempt is logged and made again, up to attempts in all. (The 50 ms
// deadline counts from when the store first asks for it: counted from
// before the call, a stalled machine let it end before the admission
// began, seen under -race at load 8.) A store that set no lock timeout
// from its budget ends every attempt that way and fails; any other
// outcome is judged at once.
func TestWarmUpEndsOnAHeldTableLockKeepingTheConnection(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		for _, tc := range []struct {
			deadline, budget time.Duration
		}{{0, 3 * time.Second}, {50 * time.Millisecond, time.Second}} {
			const attempts = 4
			for try := 1; !warmUpOnAHeldTableLock(t, e, tc.deadline, tc.budget, try < attempts); try++ {
				t.Logf("attempt %d of %d: the machine held back the moment under test (the budget ended the warm-up's wait on the client before the server's lock timeout was answered), trying again", try, attempts)
			}
		}
	})
}

// warmUpOnAHeldTableLock makes one attempt of
// TestWarmUpEndsOnAHeldTableLockKeepingTheConnection. When mayRetry is set,
// it reports false, having checked what must hold then, if the budget
// ended the wait on the client before the server's lock timeout did.
func warmUpOnAHeldTableLock(t *testing.T, e entry, deadline, budget time.Duration, mayRetry bool) bool {
	t.Helper()
	f := setup(t, e.cfg(postgres.Config{}))
	store, pool := f.newStore(t, e.cfg(postgres.Config{OperationTimeout: budget}), named("warm-lock"))
	// The pool's one connection, opened but never used by the store.
	require.NoError(t, pool.Ping(context.Background()))
	before := backends(t, pool)
	require.Len(t, before, 1)
	checks := e.checks(f, policy(t, "warm.lock", 5, time.Hour), "held")

	tx := f.hold(t)
	lockTable(t, tx)
	// The deadline counts from when the store asks for it, so that it
	// cannot pass before the admission begins.
	err := e.admitWithin(store, checks, deadline)
	ae := requireAdmissionError(t, err, postgres.OpAcquire, false)
	require.True(t, ae.Timeout, "deadline %v", deadline)
	require.ErrorIs(t, err, postgres.ErrTimeout)

	after := backends(t, pool)
	var dbErr *postgres.DatabaseError
	if mayRetry && !slices.Equal(before, after) && errors.As(err, &dbErr) && dbErr.Code == "" && dbErr.Timeout {
		// The budget, not the server, ended the wait: the connection's
		// state was unknown and it was closed. Nothing was consumed.
		t.Logf("deadline %v: %v", deadline, err)
		require.NoError(t, tx.Rollback(context.Background()))
		f.requireAbsent(t, checks)
		return false
	}
	require.Equal(t, before, after, "deadline %v: the connection was replaced: %v", deadline, err)
	require.NoError(t, tx.Rollback(context.Background()))
	e.allow(t, store, checks)
	f.requireUsed(t, checks, 1)
	require.Equal(t, before, backends(t, pool), "deadline %v: the connection was replaced", deadline)
	return true
}

// A statement_timeout set for the role bounds only the one statement that
// sets the store's own: the store's work runs under its own budget. Here
// Ready, whose checks and warm-up wait for a table lock longer than the
// role's 200 ms, answers once the lock is gone, and admissions and cleanup
// work on the connection it warmed. (The role's timeout is not shorter:
// the statement that sets the store's own runs under it, and under -race
// on a loaded machine a first statement of a new connection took more
// than 5 ms.)
func TestRoleStatementTimeoutDoesNotBoundTheStoresWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, postgres.Config{})
	const app = "role-timeout"
	store, pool := f.serviceStore(t, postgres.Config{}, func(r *pgtest.Role) {
		f.db.SetRoleSetting(t, r, "statement_timeout", "200ms")
	}, named(app))
	var got string
	require.NoError(t, pool.QueryRow(ctx, "SHOW statement_timeout").Scan(&got))
	require.Equal(t, "200ms", got)

	tx := f.hold(t)
	lockTable(t, tx)
	ready := make(chan error, 1)
	go func() { ready <- store.Ready(ctx) }()
	// Polled at intervals well past the role's timeout, which would have
	// ended the wait by the first look.
	require.Eventually(t, func() bool { return f.waitsForLock(app) }, 10*time.Second, 500*time.Millisecond)
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, <-ready)

	c := f.check(policy(t, "role.timeout", 5, time.Hour), "c")
	requireAllowed(t, admit(t, store, c))
	shift(t, f.db.Pool, 2*time.Hour)
	removed, err := store.CleanupExpired(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, removed)
}

// The settings an operator may give the service's role (or its database)
// without changing what the store answers: values travel in binary format,
// the planner's settings change only its speed, the timeouts are set for
// every transaction first, and a stricter isolation is served. For each,
// on both protocols, single checks and batches admit exactly their limit,
// Ready, Stats and cleanup work, and the ledger matches the table.
func TestSettingsThatChangeNoAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  [][]string // name, then values
	}{
		{"bytea_output", [][]string{{"bytea_output", "escape"}}},
		{"DateStyle", [][]string{{"DateStyle", "SQL", "DMY"}}},
		{"IntervalStyle", [][]string{{"IntervalStyle", "iso_8601"}}},
		{"TimeZone", [][]string{{"TimeZone", "Pacific/Chatham"}}},
		{"extra_float_digits", [][]string{{"extra_float_digits", "-15"}}},
		{"standard_conforming_strings", [][]string{{"standard_conforming_strings", "off"}}},
		{"client_encoding", [][]string{{"client_encoding", "LATIN1"}}},
		{"generic plans", [][]string{{"plan_cache_mode", "force_generic_plan"}}},
		{"custom plans", [][]string{{"plan_cache_mode", "force_custom_plan"}}},
		{"jit", [][]string{{"jit_above_cost", "0"}, {"jit", "on"}, {"jit_inline_above_cost", "0"}, {"jit_optimize_above_cost", "0"}}},
		{"planner switches", [][]string{{"enable_indexscan", "off"}, {"enable_bitmapscan", "off"}, {"enable_indexonlyscan", "off"},
			{"enable_nestloop", "off"}, {"enable_hashjoin", "off"}, {"enable_mergejoin", "off"}, {"enable_sort", "off"},
			{"enable_material", "off"}, {"enable_tidscan", "off"}}},
		{"work_mem", [][]string{{"work_mem", "64kB"}}},
		{"deferrable", [][]string{{"default_transaction_deferrable", "on"}}},
		{"repeatable read", [][]string{{"default_transaction_isolation", "repeatable read"}}},
		{"lock_timeout", [][]string{{"lock_timeout", "1ms"}}},
		{"idle_in_transaction_session_timeout", [][]string{{"idle_in_transaction_session_timeout", "1ms"}}},
		{"empty search_path", [][]string{{"search_path", ""}}},
	} {
		for _, protocol := range []postgres.Protocol{postgres.Locked, postgres.Optimistic} {
			t.Run(tc.name+"/"+protocol.String(), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				f := setup(t, postgres.Config{})
				// The case asks whether a setting changes an answer, not how
				// fast the store gives it: forced JIT compiles every statement
				// of the warm-up, which a loaded machine has taken more than
				// the default budgets to do.
				store, pool := f.serviceStore(t, postgres.Config{Protocol: protocol, AcquireTimeout: 30 * time.Second, OperationTimeout: 30 * time.Second}, func(r *pgtest.Role) {
					for _, s := range tc.set {
						f.db.SetRoleSetting(t, r, s[0], s[1:]...)
					}
				}, nil)
				// The setting holds in the role's sessions, not in others.
				var got, usual string
				const show = "SELECT pg_catalog.current_setting($1)"
				require.NoError(t, pool.QueryRow(ctx, show, tc.set[0][0]).Scan(&got))
				require.NoError(t, f.db.Pool.QueryRow(ctx, show, tc.set[0][0]).Scan(&usual))
				require.NotEqual(t, usual, got)

				require.NoError(t, store.Ready(ctx))
				p := policy(t, "settings", 2, time.Hour)
				c, a, b := f.check(p, "c"), f.check(p, "a"), f.check(p, "b")
				for _, want := range []domain.Outcome{domain.Allowed, domain.Allowed, domain.Denied} {
					d, err := store.AdmitCheck(ctx, c)
					require.NoError(t, err)
					require.Equal(t, want, d.Outcome())
					bd, err := tryAdmit(ctx, store, a, b)
					require.NoError(t, err)
					require.Equal(t, want, bd.Outcome())
				}
				f.requireUsed(t, []domain.Check{c, a, b}, 2)
				st, err := store.Stats(ctx)
				require.NoError(t, err)
				require.Equal(t, int64(3), st.Entries)
				for _, k := range []domain.Check{c, a, b} {
					f.ledger(t, postgres.ShardOf(k.CounterKey()))
				}
				shift(t, f.db.Pool, 2*time.Hour)
				removed, err := store.CleanupExpired(ctx, 10)
				require.NoError(t, err)
				require.Equal(t, 3, removed)
				require.Zero(t, f.rowCount(t))
			})
		}
	}
}

// A role whose transactions are read-only by default (or a standby) cannot
// be served: Ready says why, every admission fails closed without
// consuming, and cleanup removes nothing. Each failed warm-up takes back
// the statements it prepared, so the connection stays in the pool: a
// database turned read-only (a failover to a standby) costs each caller a
// round trip, not a new connection.
func TestReadOnlyDefaultFailsClosed(t *testing.T) {
	t.Parallel()
	eachEntry(t, func(t *testing.T, e entry) {
		ctx := context.Background()
		f := setup(t, e.cfg(postgres.Config{}))
		p := policy(t, "read.only", 5, time.Hour)
		expired := f.check(p, "expired")
		requireAllowed(t, admit(t, f.store, expired))
		shift(t, f.db.Pool, 2*time.Hour)
		store, pool := f.serviceStore(t, e.cfg(postgres.Config{}), func(r *pgtest.Role) {
			f.db.SetRoleSetting(t, r, "default_transaction_read_only", "on")
		}, func(c *pgxpool.Config) { c.MaxConns = 1 })

		readOnly := func(err error) {
			t.Helper()
			var dbErr *postgres.DatabaseError
			require.ErrorAs(t, err, &dbErr)
			require.Equal(t, "25006", dbErr.Code) // read_only_sql_transaction
			require.False(t, ports.MayHaveConsumedQuota(err))
		}
		readOnly(store.Ready(ctx))
		opened := pool.Stat().NewConnsCount()
		checks := e.checks(f, p, "new")
		for range 2 {
			_, err := e.admit(ctx, store, checks)
			requireAdmissionError(t, err, postgres.OpAcquire, false)
			readOnly(err)
		}
		f.requireAbsent(t, checks)
		// Each failed warm-up took back what it had prepared: the
		// connection stayed in the pool, and no caller opened a new one.
		require.Equal(t, opened, pool.Stat().NewConnsCount())
		require.Equal(t, int32(1), pool.Stat().TotalConns())
		_, err := store.CleanupExpired(ctx, 10)
		readOnly(err)
		requireMaintenanceFailed(t, err, false)
		f.requireUsed(t, []domain.Check{expired}, 1)
	})
}
