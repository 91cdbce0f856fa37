package postgres_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

// The tests below pin the optimistic protocol's own steps with locks held
// by the test; the conformance suite (TestConformanceOptimistic) and the
// fault tests (the "optimistic single check" entry) cover the rest.

// An optimistic single check of a stored key takes no advisory lock: it
// is admitted while another transaction holds the key's advisory lock,
// where the locked protocol waits for it until its budget ends.
func TestOptimisticCheckOfAStoredKeyTakesNoAdvisoryLock(t *testing.T) {
	t.Parallel()
	for _, protocol := range []postgres.Protocol{postgres.Locked, postgres.Optimistic} {
		t.Run(protocol.String(), func(t *testing.T) {
			t.Parallel()
			f := setup(t, postgres.Config{})
			// The budget ends the locked protocol's wait for the lock; the
			// connection is warmed first, under the default budget, which
			// 300 ms on a loaded machine may not cover.
			store, pool := f.newStore(t, postgres.Config{Protocol: protocol, OperationTimeout: 300 * time.Millisecond},
				func(c *pgxpool.Config) { c.MaxConns = 1 })
			warmFor(t, store, pool)
			c := f.check(policy(t, "opt.advisory", 5, time.Hour), "stored")
			requireAllowed(t, admit(t, f.store, c))

			tx := f.hold(t)
			lockAdvisory(t, tx, c)
			d, err := store.AdmitCheck(context.Background(), c)
			if protocol == postgres.Locked {
				requireAdmissionError(t, err, postgres.OpLock, false)
				f.requireUsed(t, []domain.Check{c}, 1)
				return
			}
			require.NoError(t, err)
			require.Equal(t, domain.Allowed, d.Outcome())
			f.requireUsed(t, []domain.Check{c}, 2)
		})
	}
}

// A write that meets a concurrent admission changes nothing and the check
// starts again: the test's transaction holds the row lock while the check
// reads and evaluates, then consumes a unit itself and commits. The check's
// update, which waited for that lock, finds the counter changed, and its
// second attempt counts on top of it. No update is lost.
func TestOptimisticWriteRetriesAfterAConcurrentAdmission(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	store, _ := f.newStore(t, postgres.Config{Protocol: postgres.Optimistic}, named("opt-conflict"))
	c := f.check(policy(t, "opt.conflict", 5, time.Hour), "stored")
	requireAllowed(t, admit(t, f.store, c))

	tx := f.hold(t)
	lockRow(t, tx, c)
	answers := checkInBackground(store, c)
	f.waitForLockWait(t, "opt-conflict")
	k := c.CounterKey().Bytes()
	_, err := tx.Exec(context.Background(), `UPDATE runlimit_fixed_windows SET used = used + 1
		WHERE config_fingerprint = $1 AND subject_key = $2`, k[:32], k[32:])
	require.NoError(t, err)
	require.NoError(t, tx.Commit(context.Background()))

	a := <-answers
	require.NoError(t, a.err)
	require.Equal(t, domain.Allowed, a.d.Outcome())
	allowance, ok := a.d.Allowance()
	require.True(t, ok)
	require.Equal(t, int64(2), allowance.Remaining, "the check counted after the concurrent admission")
	f.requireUsed(t, []domain.Check{c}, 3)
}

// answer is what an AdmitCheck run in the background returned.
type answer struct {
	d   domain.Decision
	err error
}

// checkHeldAfterRead starts an optimistic check of c in the background and
// returns once its read has answered and its write is held on the wire:
// the test can change the key before letting the write go.
func (f *fixture) checkHeldAfterRead(t *testing.T, w *wire, store *postgres.Store, app string, c domain.Check) (answers <-chan answer, let func()) {
	t.Helper()
	held, let := w.holdNext(1)
	answers = checkInBackground(store, c)
	<-held
	f.waitForIdleAfter(t, app, "LEFT JOIN")
	return answers, let
}

// checkInBackground runs store.AdmitCheck(c) in a goroutine of its own,
// for a test that holds a lock it waits for.
func checkInBackground(store *postgres.Store, c domain.Check) <-chan answer {
	answers := make(chan answer, 1)
	go func() {
		d, err := store.AdmitCheck(context.Background(), c)
		answers <- answer{d, err}
	}()
	return answers
}

// A new key's insert takes the key's advisory lock first, as the locked
// protocol does: a locked admission that found the key absent and holds
// that lock inserts the row, and the optimistic insert, queued behind it,
// then conflicts instead of failing on the duplicate key or failing the
// other's insert. Its second attempt updates the row; the ledger counts the
// key once.
func TestOptimisticInsertWaitsForTheKeysAdvisoryLock(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	store, _ := f.newStore(t, postgres.Config{Protocol: postgres.Optimistic}, named("opt-insert"))
	c := f.check(policy(t, "opt.insert", 5, time.Hour), "new")
	shard := postgres.ShardOf(c.CounterKey())

	tx := f.hold(t)
	lockAdvisory(t, tx, c)
	answers := checkInBackground(store, c)
	f.waitForLockWait(t, "opt-insert")
	createOne(t, tx, c)
	require.NoError(t, tx.Commit(context.Background()))

	a := <-answers
	require.NoError(t, a.err)
	require.Equal(t, domain.Allowed, a.d.Outcome())
	f.requireUsed(t, []domain.Check{c}, 2)
	require.Equal(t, int64(1), f.ledger(t, shard))
}

// Protocol is validated with the rest of the configuration, and its text
// form parses back.
func TestProtocolConfig(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	_, err := postgres.New(f.db.Pool, postgres.Config{Protocol: postgres.Optimistic + 1})
	var ce *postgres.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Protocol", ce.Field)
	require.ErrorIs(t, err, postgres.ErrInvalidConfig)

	for _, p := range []postgres.Protocol{postgres.Locked, postgres.Optimistic} {
		got, err := postgres.ParseProtocol(p.String())
		require.NoError(t, err)
		require.Equal(t, p, got)
	}
	got, err := postgres.ParseProtocol("")
	require.NoError(t, err)
	require.Equal(t, postgres.Locked, got)
	_, err = postgres.ParseProtocol("Optimistic")
	require.ErrorIs(t, err, postgres.ErrInvalidConfig)

	// By name in JSON, both ways.
	b, err := json.Marshal(postgres.Config{Protocol: postgres.Optimistic})
	require.NoError(t, err)
	require.Contains(t, string(b), `"Protocol":"optimistic"`)
	var cfg postgres.Config
	require.NoError(t, json.Unmarshal([]byte(`{"Protocol":"locked"}`), &cfg))
	require.Equal(t, postgres.Locked, cfg.Protocol)
	require.NoError(t, json.Unmarshal([]byte(`{"Protocol":"optimistic"}`), &cfg))
	require.Equal(t, postgres.Optimistic, cfg.Protocol)
	require.ErrorIs(t, json.Unmarshal([]byte(`{"Protocol":"fast"}`), &cfg), postgres.ErrInvalidConfig)
	_, err = json.Marshal(postgres.Config{Protocol: postgres.Optimistic + 1})
	require.ErrorIs(t, err, postgres.ErrInvalidConfig)
}

// A conditional write that applied nothing committed nothing. A caller
// who leaves after it, while the check's second attempt reads or while the
// locked protocol it falls back to after a second conflict waits for a
// lock, is told that no quota was consumed, at the step the check had
// reached.
func TestOptimisticConflictConsumedNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		fallback bool
	}{
		{"caller leaves during the second read", false},
		{"caller leaves during the locked fallback", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, postgres.Config{})
			app := "opt-left"
			if tc.fallback {
				app = "opt-left-fallback"
			}
			store, pool, w := f.newNamedWiredStore(t, postgres.Config{Protocol: postgres.Optimistic}, app)
			c := f.check(policy(t, "opt.left", 10, time.Hour), "c")
			requireAllowed(t, admit(t, store, c))
			before := backends(t, pool)

			// Round trip 1 reads; round trip 2, the write, waits for the
			// test's row lock and meets the test's admission; round trip
			// 3, the second read, is held.
			held, let := w.holdNext(3)
			tx := f.hold(t)
			lockRow(t, tx, c)
			// A deadline far away: the caller leaves when it cancels,
			// without waiting for the work.
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			errs := make(chan error, 1)
			go func() {
				_, err := store.AdmitCheck(ctx, c)
				errs <- err
			}()
			f.waitForLockWait(t, app)
			consumeOne(t, tx, c)
			require.NoError(t, tx.Commit(context.Background()))
			<-held
			if tc.fallback {
				// The second read has run: another admission commits
				// before the second write, which conflicts too, and the
				// locked protocol then waits for the key's advisory lock.
				f.waitForIdleAfter(t, app, "LEFT JOIN")
				other := f.hold(t)
				consumeOne(t, other, c)
				require.NoError(t, other.Commit(context.Background()))
				lock := f.hold(t)
				lockAdvisory(t, lock, c)
				let()
				f.waitForLockWait(t, app)
			}
			cancel()
			err := <-errs
			if !tc.fallback {
				let()
			}
			ae := requireAdmissionError(t, err, postgres.OpLock, false)
			require.False(t, ae.Timeout)
			require.ErrorIs(t, err, context.Canceled)

			want := int64(2)
			if tc.fallback {
				want = 3
				// The server cancelled the lock wait: the connection is kept.
				require.Equal(t, before, backends(t, pool))
			}
			f.requireUsed(t, []domain.Check{c}, want)
		})
	}
}

// consumeOne counts one unit on c's counter in tx, as a concurrent
// admission would.
// createOne stores c's counter in tx, as another replica's admission
// would: one unit used, in a window of an hour from the transaction's start.
func createOne(t *testing.T, tx pgx.Tx, c domain.Check) {
	t.Helper()
	k := c.CounterKey().Bytes()
	p := c.Policy()
	_, err := tx.Exec(context.Background(), `INSERT INTO runlimit_fixed_windows
		(policy_id, scope_id, config_fingerprint, subject_key, used, window_started_at, window_expires_at)
		VALUES ($1, $2, $3, $4, 1, pg_catalog.now(), pg_catalog.now() + interval '1 hour')`,
		p.ID().String(), p.Scope().String(), k[:32], k[32:])
	require.NoError(t, err)
}

func consumeOne(t *testing.T, tx pgx.Tx, c domain.Check) {
	t.Helper()
	k := c.CounterKey().Bytes()
	tag, err := tx.Exec(context.Background(), `UPDATE runlimit_fixed_windows SET used = used + 1
		WHERE config_fingerprint = $1 AND subject_key = $2`, k[:32], k[32:])
	require.NoError(t, err)
	require.Equal(t, int64(1), tag.RowsAffected())
}

// waitForIdleAfter waits until the session of application app is idle
// after a statement whose text holds fragment: the server has run it,
// whatever the network does with its answer.
func (f *fixture) waitForIdleAfter(t *testing.T, app, fragment string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND state = 'idle'
			  AND pg_catalog.strpos(query, $2) > 0`, app, fragment).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond)
}

// Time never runs backwards for a key, even when its counter was created
// and deleted between an optimistic check's read and its insert. The read
// finds the key absent; another admission then creates the key's counter,
// whose window ends (the test shifts it into the past) and which cleanup
// deletes; only then does the insert, which finds no conflicting row, run.
// That admission was admitted, and its counter committed and deleted,
// before the insert: the window the insert stores must not start before
// that admission's time, as it would if it were anchored at the read's
// clock sample rather than at the time the insert holds its locks.
func TestOptimisticInsertAfterACleanedUpCounterKeepsTimeMonotonic(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	const app = "opt-late-insert"
	store, _, w := f.newNamedWiredStore(t, postgres.Config{Protocol: postgres.Optimistic}, app)
	p := policy(t, "opt.late", 1, time.Hour)
	c := f.check(p, "c")
	requireAllowed(t, admit(t, store, f.check(p, "warm")))

	answers, let := f.checkHeldAfterRead(t, w, store, app, c)
	// The read has found the key absent; another replica admits it.
	requireAllowed(t, admit(t, f.store, c))
	other, ok := f.stored(t, c)
	require.True(t, ok)
	shift(t, f.db.Pool, time.Hour)
	_, err := f.store.CleanupExpired(context.Background(), 10)
	require.NoError(t, err)
	f.requireAbsent(t, []domain.Check{c})

	let()
	a := <-answers
	require.NoError(t, a.err)
	require.Equal(t, domain.Allowed, a.d.Outcome())
	got, ok := f.stored(t, c)
	require.True(t, ok)
	require.GreaterOrEqual(t, got.Start, other.Start,
		"the inserted window starts before the admission that was committed and cleaned up ahead of it")
	require.Equal(t, p.Window(), got.Expires.Sub(got.Start))
	require.Equal(t, int64(1), f.ledger(t, postgres.ShardOf(c.CounterKey())))
}

// An optimistic insert never holds its shard's ledger row while it waits
// for a counter of its key that cleanup is deleting: cleanup's ledger
// trigger waits for that very row, and the two would deadlock until the
// server aborted one of them. The read finds the key absent; another
// admission creates its counter, whose window ends; the test holds the
// shard's ledger row while the insert and cleanup run, in either order,
// then lets it go. Both must finish: the check is admitted, and cleanup
// succeeds.
//
// Insert first: an insert that locks the ledger row before it looks at
// the key's counter queues for it ahead of cleanup, which deletes the
// counter and queues behind; once the ledger row is free, the insert waits
// for cleanup's delete and cleanup for the insert's ledger row. Cleanup
// first: the insert finds the counter being deleted and waits for cleanup,
// holding no ledger row, then creates the key.
func TestOptimisticInsertAndCleanupDoNotDeadlock(t *testing.T) {
	t.Parallel()
	for _, cleanupFirst := range []bool{false, true} {
		name, app, cleaner := "insert first", "opt-insert-first", "opt-cleaner-second"
		if cleanupFirst {
			name, app, cleaner = "cleanup first", "opt-insert-second", "opt-cleaner-first"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, postgres.Config{})
			store, _, w := f.newNamedWiredStore(t, postgres.Config{Protocol: postgres.Optimistic}, app)
			cleanup, _ := f.newStore(t, postgres.Config{}, named(cleaner))
			p := policy(t, "opt.cleaned", 5, time.Hour)
			c := f.check(p, "c")
			shard := postgres.ShardOf(c.CounterKey())
			requireAllowed(t, admit(t, store, f.check(policy(t, "opt.warm", 5, time.Hour), "warm")))

			answers, let := f.checkHeldAfterRead(t, w, store, app, c)
			requireAllowed(t, admit(t, f.store, c))
			other, _ := f.stored(t, c)
			shift(t, f.db.Pool, time.Hour)

			tx := f.hold(t)
			_, err := tx.Exec(context.Background(), "SELECT FROM runlimit_capacity_shards WHERE capacity_shard = $1 FOR UPDATE", shard)
			require.NoError(t, err)
			removed := make(chan error, 1)
			clean := func() {
				go func() {
					_, err := cleanup.CleanupExpired(context.Background(), 10)
					removed <- err
				}()
			}
			if cleanupFirst {
				clean()
				f.waitForLockWait(t, cleaner)
				let()
				f.waitForLockWait(t, app)
			} else {
				let()
				// The check queues for the ledger row or, having seen the
				// counter, is answered already; cleanup then queues for
				// the ledger row, or has nothing of the key's to delete.
				require.Eventually(t, func() bool { return len(answers) > 0 || f.waitsForLock(app) },
					10*time.Second, 5*time.Millisecond)
				clean()
				require.Eventually(t, func() bool { return len(removed) > 0 || f.waitsForLock(cleaner) },
					10*time.Second, 5*time.Millisecond)
			}
			require.NoError(t, tx.Commit(context.Background()))

			a := <-answers
			require.NoError(t, a.err)
			require.Equal(t, domain.Allowed, a.d.Outcome())
			require.NoError(t, <-removed)
			got, ok := f.stored(t, c)
			require.True(t, ok)
			require.Equal(t, int64(1), got.Used)
			require.GreaterOrEqual(t, got.Start, other.Start)
			require.Equal(t, int64(1), f.ledger(t, shard))
		})
	}
}

// The optimistic insert checks its shard's bound again on the ledger row
// it locks, not on the count its read saw: the read finds one slot left,
// another replica then takes it, and the insert changes nothing. The check
// starts again, finds the shard full and is denied for storage capacity.
func TestOptimisticInsertChecksTheBoundOnTheLockedLedgerRow(t *testing.T) {
	t.Parallel()
	const bound, shard = 4, 9
	f := setup(t, postgres.Config{RowsPerShard: bound})
	const app = "opt-last-slot"
	store, _, w := f.newNamedWiredStore(t, postgres.Config{Protocol: postgres.Optimistic, RowsPerShard: bound}, app)
	p := policy(t, "opt.slots", 1, time.Hour)
	keys := f.checksInShard(t, p, shard, bound+1)
	for _, c := range keys[:bound-1] {
		requireAllowed(t, admit(t, store, c))
	}

	answers, let := f.checkHeldAfterRead(t, w, store, app, keys[bound])
	requireAllowed(t, admit(t, f.store, keys[bound-1]))
	let()

	a := <-answers
	require.NoError(t, a.err)
	denial, ok := a.d.Denial()
	require.True(t, ok, "the last slot was taken twice")
	require.Equal(t, domain.StorageCapacity, denial.Reason())
	f.requireAbsent(t, keys[bound:])
	require.Equal(t, int64(bound), f.ledger(t, shard))
}

// The optimistic write relies on read committed: an update that waited for
// a row finds it changed and changes nothing, an insert meets a counter its
// snapshot does not show. A database or role whose default isolation is
// stricter (ALTER DATABASE ... SET default_transaction_isolation) makes
// the server abort such a write with a serialization failure instead:
// nothing was committed, and the check must start again as after any
// other conflict, not fail. Locked admissions set their isolation
// themselves.
func TestOptimisticWriteUnderAStricterDefaultIsolation(t *testing.T) {
	t.Parallel()
	for _, level := range []string{"repeatable read", "serializable"} {
		for _, stored := range []bool{true, false} {
			name := level + "/new key"
			if stored {
				name = level + "/stored key"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				f := setup(t, postgres.Config{})
				app := "opt-iso-" + strings.ReplaceAll(name, " ", "-")
				store, _ := f.newStore(t, postgres.Config{Protocol: postgres.Optimistic}, func(c *pgxpool.Config) {
					named(app)(c)
					c.ConnConfig.RuntimeParams["default_transaction_isolation"] = level
				})
				c := f.check(policy(t, "opt.isolation", 5, time.Hour), "c")
				if stored {
					requireAllowed(t, admit(t, f.store, c))
				}

				// The write waits for the test's lock, behind which a
				// concurrent admission commits.
				tx := f.hold(t)
				if stored {
					lockRow(t, tx, c)
				} else {
					lockAdvisory(t, tx, c)
				}
				answers := checkInBackground(store, c)
				f.waitForLockWait(t, app)
				if stored {
					consumeOne(t, tx, c)
				} else {
					createOne(t, tx, c)
				}
				require.NoError(t, tx.Commit(context.Background()))

				a := <-answers
				require.NoError(t, a.err)
				require.Equal(t, domain.Allowed, a.d.Outcome())
				want := int64(2)
				if stored {
					want = 3
				}
				f.requireUsed(t, []domain.Check{c}, want)
				require.Equal(t, int64(1), f.ledger(t, postgres.ShardOf(c.CounterKey())))
			})
		}
	}
}

// A write based on a read older than a concurrent renewal never stores its
// own, earlier window over the renewed one: the read sees the key's window
// ended, another replica then renews it at a later time (the same count,
// a new start and expiry), and the update, which expected the ended
// window, changes nothing. The check starts again and counts on the
// renewed window.
func TestOptimisticUpdateAfterARenewalKeepsTheNewWindow(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	const app = "opt-renewed"
	store, _, w := f.newNamedWiredStore(t, postgres.Config{Protocol: postgres.Optimistic}, app)
	c := f.check(policy(t, "opt.renewed", 5, time.Hour), "c")
	requireAllowed(t, admit(t, store, c))
	shift(t, f.db.Pool, 2*time.Hour)

	answers, let := f.checkHeldAfterRead(t, w, store, app, c)
	requireAllowed(t, admit(t, f.store, c))
	renewed, _ := f.stored(t, c)
	let()

	a := <-answers
	require.NoError(t, a.err)
	require.Equal(t, domain.Allowed, a.d.Outcome())
	got, _ := f.stored(t, c)
	require.Equal(t, domain.Counter{Used: 2, Start: renewed.Start, Expires: renewed.Expires}, got)
}

// Under read committed, an update that waited for its row re-reads the
// row's latest version: it applies only when that version still holds the
// counter it read. A lock holder that changed the counter makes it change
// nothing (the check starts again and counts on top); one that rolled back,
// or wrote the very same values, left the counter as read, and it applies.
func TestOptimisticUpdateAfterWaitingForARowLock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		holder string // what the lock holder does to the row before it ends
		commit bool
		used   int64 // the counter afterwards
		trips  int64 // the check's round trips
	}{
		{"holder commits a change", "used = used + 1", true, 3, 4},
		{"holder commits the same values", "used = used", true, 2, 2},
		{"holder rolls back", "used = used + 1", false, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, postgres.Config{})
			app := "opt-holder-" + strings.ReplaceAll(tc.name, " ", "-")
			store, _, w := f.newNamedWiredStore(t, postgres.Config{Protocol: postgres.Optimistic}, app)
			c := f.check(policy(t, "opt.holder", 5, time.Hour), "c")
			requireAllowed(t, admit(t, store, c))

			tx := f.hold(t)
			lockRow(t, tx, c)
			before := w.trips.Load()
			answers := checkInBackground(store, c)
			f.waitForLockWait(t, app)
			k := c.CounterKey().Bytes()
			_, err := tx.Exec(context.Background(), `UPDATE runlimit_fixed_windows SET `+tc.holder+`
				WHERE config_fingerprint = $1 AND subject_key = $2`, k[:32], k[32:])
			require.NoError(t, err)
			if tc.commit {
				require.NoError(t, tx.Commit(context.Background()))
			} else {
				require.NoError(t, tx.Rollback(context.Background()))
			}

			a := <-answers
			require.NoError(t, a.err)
			require.Equal(t, domain.Allowed, a.d.Outcome())
			require.Equal(t, tc.trips, w.trips.Load()-before)
			f.requireUsed(t, []domain.Check{c}, tc.used)
		})
	}
}

// A backend killed while the write waits for a lock reports the write's
// own failure before its implicit COMMIT: nothing was committed, and the
// error says so. The store replaces the connection and admits the next
// check.
func TestOptimisticWriteOfAKilledBackendConsumedNothing(t *testing.T) {
	t.Parallel()
	for _, stored := range []bool{true, false} {
		name, app := "new key", "opt-killed-new"
		if stored {
			name, app = "stored key", "opt-killed-stored"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, postgres.Config{})
			store, pool := f.newStore(t, postgres.Config{Protocol: postgres.Optimistic}, named(app))
			c := f.check(policy(t, "opt.killed", 5, time.Hour), "c")
			tx := f.hold(t)
			if stored {
				requireAllowed(t, admit(t, store, c))
				lockRow(t, tx, c)
			} else {
				lockAdvisory(t, tx, c)
			}
			answers := checkInBackground(store, c)
			f.waitForLockWait(t, app)
			var killed bool
			require.NoError(t, f.db.Pool.QueryRow(context.Background(), `SELECT pg_catalog.bool_and(pg_catalog.pg_terminate_backend(pid))
				FROM pg_catalog.pg_stat_activity WHERE datname = current_database() AND application_name = $1`, app).Scan(&killed))
			require.True(t, killed)

			a := <-answers
			requireAdmissionError(t, a.err, postgres.OpWrite, false)
			require.NoError(t, tx.Rollback(context.Background()))
			want := int64(0)
			if stored {
				want = 1
				f.requireUsed(t, []domain.Check{c}, want)
			} else {
				f.requireAbsent(t, []domain.Check{c})
			}
			requireNoneAcquired(t, pool)
			d, err := store.AdmitCheck(context.Background(), c)
			require.NoError(t, err)
			require.Equal(t, domain.Allowed, d.Outcome())
			f.requireUsed(t, []domain.Check{c}, want+1)
		})
	}
}
