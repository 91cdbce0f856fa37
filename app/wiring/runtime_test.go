package wiring_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/ports"
)

func TestOpenMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := wiring.Open(ctx, memoryConfig(t))
	require.NoError(t, err)

	p := loginPolicy(t, "auth.login")
	require.True(t, check(t, r.Limiter(), r.KeyHasher(), p, "user@example.test").PermitsRequest())
	require.True(t, check(t, r.Limiter(), r.KeyHasher(), p, "user@example.test").PermitsRequest())
	d := check(t, r.Limiter(), r.KeyHasher(), p, "user@example.test")
	denial, denied := d.Denial()
	require.True(t, denied)
	require.Equal(t, domain.QuotaExhausted, denial.Reason())
	require.Nil(t, r.Gate(), "no gate was configured")

	require.NoError(t, r.Close(ctx))
	// The store is closed: checks fail closed, consuming nothing.
	_, err = r.Limiter().Check(ctx, domain.NewCheck(p, r.KeyHasher().KeyString(p, "other")))
	require.ErrorIs(t, err, memory.ErrClosed)
	require.False(t, ports.MayHaveConsumedQuota(err))
	require.NoError(t, r.Close(ctx), "closing twice is harmless")
}

// TestOpenHashesWithTheSecret: the hasher is the one the secret's bytes
// build, so replicas sharing the secret derive the same keys.
func TestOpenHashesWithTheSecret(t *testing.T) {
	t.Parallel()
	r, err := wiring.Open(context.Background(), memoryConfig(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close(context.Background())) })

	requireHasherOf(t, r.KeyHasher())
}

// TestOpenReadsRunlimitKeySecretByDefault cannot run in parallel: it sets
// the default variable, which parallel tests never read.
func TestOpenReadsRunlimitKeySecretByDefault(t *testing.T) {
	t.Setenv(wiring.DefaultSecretEnv, testSecret)
	r, err := wiring.Open(context.Background(), wiring.Config{Memory: memory.Config{MaxKeys: 1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close(context.Background())) })

	requireHasherOf(t, r.KeyHasher())
}

func TestOpenUsesMemorySizing(t *testing.T) {
	t.Parallel()
	cfg := memoryConfig(t)
	cfg.Memory = memory.Config{MaxKeys: 1}
	r, err := wiring.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close(context.Background())) })

	p := loginPolicy(t, "auth.login")
	require.True(t, check(t, r.Limiter(), r.KeyHasher(), p, "first").PermitsRequest())
	denial, denied := check(t, r.Limiter(), r.KeyHasher(), p, "second").Denial()
	require.True(t, denied)
	require.Equal(t, domain.StorageCapacity, denial.Reason())
}

// countRows counts the counters stored in db.
func countRows(t *testing.T, db *pgtest.Database) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM runlimit_fixed_windows").Scan(&n))
	return n
}

func TestOpenPostgresFromURLMigratesAndClosesItsPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	r, err := wiring.Open(ctx, wiring.Config{
		Backend:     wiring.BackendPostgres,
		DatabaseURL: wiring.NewSecret(db.URL),
		Migrate:     true,
		SecretEnv:   setEnv(t, testSecret),
	})
	require.NoError(t, err)

	p := loginPolicy(t, "auth.login")
	require.True(t, check(t, r.Limiter(), r.KeyHasher(), p, "user").PermitsRequest())
	require.Equal(t, 1, countRows(t, db), "the check went to the database at DatabaseURL")

	require.NoError(t, r.Close(ctx))
	_, err = wiring.PoolOf(r).Acquire(ctx)
	require.Error(t, err, "Close closes the pool it opened")
	_, err = r.Limiter().Check(ctx, domain.NewCheck(p, r.KeyHasher().KeyString(p, "user")))
	require.ErrorIs(t, err, postgres.ErrClosed)
	require.False(t, ports.MayHaveConsumedQuota(err))
}

func TestOpenPostgresWithoutSchemaIsNotReady(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	r, err := wiring.Open(context.Background(), wiring.Config{
		Backend:     wiring.BackendPostgres,
		DatabaseURL: wiring.NewSecret(db.URL),
		SecretEnv:   setEnv(t, testSecret),
	})
	require.Nil(t, r)
	require.ErrorContains(t, err, "runlimit: the postgres store is not ready")
}

func TestOpenPostgresNeverClosesTheHostPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	r, err := wiring.Open(ctx, wiring.Config{
		Backend:   wiring.BackendPostgres,
		Pool:      wiring.BorrowPool(db.Pool),
		SecretEnv: setEnv(t, testSecret),
	})
	require.NoError(t, err)
	p := loginPolicy(t, "auth.login")
	require.True(t, check(t, r.Limiter(), r.KeyHasher(), p, "user").PermitsRequest())

	require.NoError(t, r.Close(ctx))
	require.Equal(t, 1, countRows(t, db), "the host's pool still works after Close")
}

// TestOpenPostgresCleanupLoop drives the loop by hand: expired rows are
// deleted in batches of CleanupBatch until none is left.
func TestOpenPostgresCleanupLoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	r, ticks, errs := openWithLoop(t, db, 2)

	p := loginPolicy(t, "auth.login")
	for _, subject := range []string{"a", "b", "c", "d", "e"} {
		require.True(t, check(t, r.Limiter(), r.KeyHasher(), p, subject).PermitsRequest())
	}
	// Active counters survive a pass.
	tick(t, ticks)
	tick(t, ticks) // taken once the first pass is over
	require.Equal(t, 5, countRows(t, db))

	// Move every window an hour into the past: all five expire.
	_, err := db.Pool.Exec(ctx, `UPDATE runlimit_fixed_windows
		SET window_started_at = window_started_at - interval '1 hour',
		    window_expires_at = window_expires_at - interval '1 hour'`)
	require.NoError(t, err)
	tick(t, ticks)
	tick(t, ticks)
	// One pass removed all five, two at a time.
	require.Equal(t, 0, countRows(t, db))
	require.Empty(t, errs)
}

func TestOpenPostgresReportsCleanupErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	_, ticks, errs := openWithLoop(t, db, 0)

	// Break the table under the running loop.
	_, err := db.Pool.Exec(ctx, "ALTER TABLE runlimit_fixed_windows RENAME TO runlimit_fixed_windows_gone")
	require.NoError(t, err)
	tick(t, ticks)
	err = <-errs
	var ce *wiring.CleanupError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "postgres", ce.Store)
	var me *postgres.MaintenanceError
	require.ErrorAs(t, err, &me)

	// The loop carries on: after repair, the next pass succeeds.
	_, err = db.Pool.Exec(ctx, "ALTER TABLE runlimit_fixed_windows_gone RENAME TO runlimit_fixed_windows")
	require.NoError(t, err)
	tick(t, ticks)
	tick(t, ticks)
	require.Empty(t, errs)
}

// TestOpenPostgresWithGate: the gate is a separate, hard-bounded memory
// store in front of the shared quota, and never touches the database.
func TestOpenPostgresWithGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	rec := &recorder{}
	r, err := wiring.Open(ctx, wiring.Config{
		Backend:   wiring.BackendPostgres,
		Pool:      wiring.BorrowPool(db.Pool),
		Gate:      &memory.Config{MaxKeys: 2},
		SecretEnv: setEnv(t, testSecret),
		Observer:  rec,
	})
	require.NoError(t, err)
	gate := r.Gate()
	require.NotNil(t, gate)
	require.NotSame(t, gate, r.Limiter())

	h := r.KeyHasher()
	gatePolicy := loginPolicy(t, "gate.auth.login")
	sharedPolicy := loginPolicy(t, "auth.login")
	require.True(t, check(t, gate, h, gatePolicy, "a").PermitsRequest())
	require.True(t, check(t, gate, h, gatePolicy, "b").PermitsRequest())
	// The gate's bound holds: a third subject is denied before any database
	// round trip.
	denial, denied := check(t, gate, h, gatePolicy, "c").Denial()
	require.True(t, denied)
	require.Equal(t, domain.StorageCapacity, denial.Reason())
	require.Equal(t, 0, countRows(t, db), "gate checks never reach the database")

	require.True(t, check(t, r.Limiter(), h, sharedPolicy, "a").PermitsRequest())
	require.Equal(t, 1, countRows(t, db))

	// Config.Observer sees both limiters, each under its own name.
	var names []string
	var outcomes []domain.Outcome
	for _, ev := range rec.take() {
		names, outcomes = append(names, ev.limiter), append(outcomes, ev.outcome)
	}
	require.Equal(t, []string{"gate", "gate", "gate", "postgres"}, names)
	require.Equal(t, []domain.Outcome{domain.Allowed, domain.Allowed, domain.Denied, domain.Allowed}, outcomes)

	require.NoError(t, r.Close(ctx))
	_, err = gate.Check(ctx, domain.NewCheck(gatePolicy, h.KeyString(gatePolicy, "a")))
	require.ErrorIs(t, err, memory.ErrClosed, "Close closes the gate too")
}

// openWithLoop opens a Runtime on db whose cleanup loop runs one pass per
// value sent on ticks, batch rows per call (0: the default), and reports
// its errors on errs.
func openWithLoop(t *testing.T, db *pgtest.Database, batch int) (*wiring.Runtime, chan time.Time, chan error) {
	t.Helper()
	ticks := make(chan time.Time)
	errs := make(chan error, 8)
	r, err := wiring.OpenWithTicks(context.Background(), wiring.Config{
		Backend:          wiring.BackendPostgres,
		Pool:             wiring.BorrowPool(db.Pool),
		SecretEnv:        setEnv(t, testSecret),
		CleanupBatch:     batch,
		CleanupErrorFunc: func(err error) { errs <- err },
	}, ticks)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close(context.Background())) })
	return r, ticks, errs
}
