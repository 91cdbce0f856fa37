package wiring_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/ports"
)

// TestReadinessProbesDoNotTakeThePoolFromAdmissions: readiness probes
// that arrive together while the schema's version table is locked (a
// migration in progress, a hostile session) share one check, and so one
// connection, rather than each holding one of the admissions' pool for
// the store's whole budget: admissions, which do not read that table, go
// on.
func TestReadinessProbesDoNotTakeThePoolFromAdmissions(t *testing.T) {
	t.Parallel()
	const poolSize, probes = 4, 8
	db := pgtest.New(t)
	pool := db.NewPool(t, func(c *pgxpool.Config) { c.MaxConns = poolSize })
	cfg := wiring.Config{Backend: wiring.BackendPostgres, Pool: wiring.BorrowPool(pool),
		KeySecret: wiring.NewSecret(testSecret), CleanupInterval: -1}
	// Budgets far beyond the test: only the lock's release could end a
	// probe's read, and an admission waits for a connection that long.
	cfg.Postgres.OperationTimeout = time.Minute
	cfg.Postgres.AcquireTimeout = time.Minute
	ctx := context.Background()
	r, err := wiring.Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(context.Background()) })

	// Every connection of the pool warmed, and a counter stored.
	p := domain.MustPolicy("auth.login", "identity", 1000, time.Hour)
	c := domain.NewCheck(p, r.KeyHasher().KeyString(p, "someone"))
	var wg sync.WaitGroup
	for range poolSize {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.Limiter().Check(ctx, c)
		}()
	}
	wg.Wait()
	_, err = r.Limiter().Check(ctx, c)
	require.NoError(t, err)

	release := db.LockTable(t, "runlimit_schema_version")

	readies := make(chan error, probes)
	for range probes {
		go func() { readies <- r.Ready(ctx) }()
	}
	require.Eventually(t, func() bool {
		var waiting int
		err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%runlimit_schema_version%'`).Scan(&waiting)
		return err == nil && waiting > 0
	}, time.Minute, 10*time.Millisecond, "no probe reached the locked version table")

	admitted := make(chan error, 1)
	go func() {
		_, err := r.Limiter().Check(ctx, c)
		admitted <- err
	}()
	select {
	case err := <-admitted:
		require.NoError(t, err)
	case <-time.After(failSafe):
		rows, _ := db.Pool.Query(ctx, `SELECT coalesce(wait_event_type,''), coalesce(wait_event,''), state, left(query, 120) FROM pg_stat_activity WHERE datname = current_database()`)
		for rows.Next() {
			var a, b, c, d string
			_ = rows.Scan(&a, &b, &c, &d)
			t.Logf("%s %s %s %q", a, b, c, d)
		}
		rows.Close()
		t.Logf("pool %d acquired", pool.Stat().AcquiredConns())
		release()
		t.Fatal("readiness probes held every connection of the pool")
	}
	release()
	for range probes {
		require.NoError(t, <-readies)
	}
}

// gatedReadyStore is a host store whose readiness check, once gated,
// waits until released or until its context ends.
type gatedReadyStore struct {
	ports.Store
	gated   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *gatedReadyStore) Ready(ctx context.Context) error {
	if !s.gated.Load() {
		return nil
	}
	s.entered <- struct{}{}
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// inSharedReady counts the goroutines in a readiness check or waiting
// for one.
func inSharedReady() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "wiring.(*runtimeState).sharedReady(")
}

// TestAProbeThatGivesUpDoesNotAnswerForTheOthers: probes share the check
// in progress, but not the answer of one whose probe gave up (a client
// that disconnected, a deadline of a few milliseconds): that answer says
// nothing of the store, and a probe still waiting checks again rather
// than report the Runtime not ready.
//
// It does not run in parallel: it counts the goroutines in a readiness
// check, and other tests' probes would count.
func TestAProbeThatGivesUpDoesNotAnswerForTheOthers(t *testing.T) {
	store := &gatedReadyStore{Store: newFakeStore(t), entered: make(chan struct{}, 2), release: make(chan struct{})}
	ctx := context.Background()
	r, err := wiring.Open(ctx, wiring.Config{Store: store, KeySecret: wiring.NewSecret(testSecret), CleanupInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(ctx) })
	store.gated.Store(true)

	impatient, giveUp := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() { first <- r.Ready(impatient) }()
	testkit.Receive(t, store.entered, failSafe, "the first probe's check")
	second := make(chan error, 1)
	go func() { second <- r.Ready(ctx) }()
	require.Eventually(t, func() bool { return inSharedReady() == 2 }, failSafe, time.Millisecond)
	giveUp()
	require.ErrorIs(t, testkit.Receive(t, first, failSafe, "the first probe's answer"), context.Canceled)
	testkit.Receive(t, store.entered, failSafe, "the second probe's own check")
	close(store.release)
	require.NoError(t, testkit.Receive(t, second, failSafe, "the second probe's answer"))
}
