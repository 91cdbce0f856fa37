package wiring_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
	"github.com/runlimit/runlimit/ports"
)

func TestReadyFollowsTheLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := wiring.New(ctx, memoryConfig(t))
	require.NoError(t, err)
	require.ErrorIs(t, r.Ready(ctx), wiring.ErrNotStarted)
	require.NoError(t, r.Start(ctx))
	require.NoError(t, r.Ready(ctx))
	require.NoError(t, r.Close(ctx))
	require.ErrorIs(t, r.Ready(ctx), wiring.ErrClosed)
	require.ErrorIs(t, r.Start(ctx), wiring.ErrClosed, "a closed Runtime does not start again")
}

// TestReadyAsksTheHostStore: a host store that reports stats is ready only
// while its Stats answers, at start and after.
func TestReadyAsksTheHostStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newFakeStore(t)
	down := errors.New("redis: i/o timeout")

	store.set(down, nil)
	_, err := wiring.Open(ctx, wiring.Config{Store: store, KeySecret: wiring.NewSecret(testSecret)})
	var nre *wiring.NotReadyError
	require.ErrorAs(t, err, &nre, "a store that does not answer fails the start")
	require.Equal(t, "store", nre.Store)
	require.ErrorIs(t, err, down)

	store.set(nil, nil)
	r, err := wiring.Open(ctx, wiring.Config{Store: store, KeySecret: wiring.NewSecret(testSecret)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(ctx) })
	require.NoError(t, r.Ready(ctx))
	store.set(down, nil)
	err = r.Ready(ctx)
	require.ErrorAs(t, err, &nre)
	require.EqualError(t, err, "runlimit: the store store is not ready: redis: i/o timeout")
	store.set(nil, nil)
	require.NoError(t, r.Ready(ctx))
}

func TestReadyAsksTheMemoryStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := wiring.Open(ctx, memoryConfig(t))
	require.NoError(t, err)
	require.NoError(t, r.Ready(ctx))
	// A nil context is a caller's mistake, reported as such.
	//lint:ignore SA1012 the nil context is the point
	require.ErrorIs(t, r.Ready(nil), ports.ErrNilContext)
	require.NoError(t, r.Close(ctx))
}

// TestReadyAsksPostgres: the database must answer and hold the schema.
func TestReadyAsksPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	r, err := wiring.Open(ctx, wiring.Config{
		Backend: wiring.BackendPostgres, Pool: wiring.BorrowPool(db.Pool), KeySecret: wiring.NewSecret(testSecret),
		Gate: &memory.Config{MaxKeys: 4},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(ctx) })
	require.NoError(t, r.Ready(ctx))

	_, err = db.Pool.Exec(ctx, "ALTER TABLE runlimit_capacity_shards RENAME TO runlimit_capacity_shards_gone")
	require.NoError(t, err)
	var nre *wiring.NotReadyError
	require.ErrorAs(t, r.Ready(ctx), &nre, "without the schema the store is not ready")
	require.Equal(t, "postgres", nre.Store)

	_, err = db.Pool.Exec(ctx, "ALTER TABLE runlimit_capacity_shards_gone RENAME TO runlimit_capacity_shards")
	require.NoError(t, err)
	require.NoError(t, r.Ready(ctx))
}

// TestReadyProvesPostgresCanAdmit: a database a Rust service migrated and
// the migrations did not adopt answers Stats, yet every admission fails
// (the lock function is missing); Ready must not say ready. With Migrate
// the Runtime adopts it and is ready. A running Runtime whose schema is
// then recorded at an older version stops being ready.
func TestReadyProvesPostgresCanAdmit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	db.MigrateAsRust(t, "public")
	cfg := wiring.Config{Pool: wiring.BorrowPool(db.NewPool(t, nil)), KeySecret: wiring.NewSecret(testSecret)}
	_, err := wiring.Open(ctx, cfg)
	var nre *wiring.NotReadyError
	require.ErrorAs(t, err, &nre, "an unadopted Rust schema fails the start")
	require.Equal(t, "postgres", nre.Store)
	var se *postgres.SchemaError
	require.ErrorAs(t, err, &se)
	require.True(t, se.Rust)

	cfg.Migrate = true
	r, err := wiring.Open(ctx, cfg)
	require.NoError(t, err, "adopted, the schema serves")
	t.Cleanup(func() { _ = r.Close(ctx) })
	require.NoError(t, r.Ready(ctx))
	p := loginPolicy(t, "auth.login")
	_, err = r.Limiter().Check(ctx, domain.NewCheck(p, r.KeyHasher().KeyString(p, "alice")))
	require.NoError(t, err)

	_, err = db.Pool.Exec(ctx, "UPDATE "+migrations.VersionTable+" SET version = version - 1")
	require.NoError(t, err)
	err = r.Ready(ctx)
	require.ErrorAs(t, err, &nre, "a schema older than this build is not ready")
	require.ErrorIs(t, err, postgres.ErrSchemaVersion)
}

// readyStore is a host store that proves its readiness itself and reports
// no stats.
type readyStore struct {
	ports.Store
	err error
}

func (s *readyStore) Ready(context.Context) error { return s.err }

// TestReadyAsksAStoresReadinessCheck: a host store's own readiness check is
// asked, at start and after, whether or not it reports stats.
func TestReadyAsksAStoresReadinessCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	down := errors.New("redis: LOADING dataset in memory")
	store := &readyStore{Store: newFakeStore(t), err: down}
	_, err := wiring.Open(ctx, wiring.Config{Store: store, KeySecret: wiring.NewSecret(testSecret)})
	var nre *wiring.NotReadyError
	require.ErrorAs(t, err, &nre)
	require.Equal(t, "store", nre.Store)
	require.ErrorIs(t, err, down)

	store.err = nil
	r, err := wiring.Open(ctx, wiring.Config{Store: store, KeySecret: wiring.NewSecret(testSecret)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(ctx) })
	require.NoError(t, r.Ready(ctx))
	require.Empty(t, r.StatsFuncs(), "a store that reports no stats has no stats func")
}
