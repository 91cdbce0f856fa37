package wiring_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/ports"
)

// TestPostgresFromAURLOpensAtStart: New opens no pool from the URL; until
// Start does, checks fail closed with ErrNotStarted, consuming nothing,
// and a Runtime closed without starting never opens one. The store's
// config is still checked by New.
func TestPostgresFromAURLOpensAtStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	cfg := wiring.Config{DatabaseURL: wiring.NewSecret(db.URL), SecretEnv: setEnv(t, testSecret), CleanupInterval: -1}
	p := loginPolicy(t, "auth.pending")

	r, err := wiring.New(ctx, cfg)
	require.NoError(t, err)
	require.Nil(t, wiring.PoolOf(r), "New opened a pool")
	check := domain.NewCheck(p, r.KeyHasher().KeyString(p, "alice"))
	_, err = r.Limiter().Check(ctx, check)
	require.ErrorIs(t, err, wiring.ErrNotStarted)
	require.False(t, ports.MayHaveConsumedQuota(err))
	_, err = r.Limiter().CheckAll(ctx, []domain.Check{check})
	require.ErrorIs(t, err, wiring.ErrNotStarted)

	require.NoError(t, r.Start(ctx))
	require.NotNil(t, wiring.PoolOf(r))
	require.Contains(t, r.StatsFuncs(), "postgres")
	d, err := r.Limiter().Check(ctx, check)
	require.NoError(t, err)
	require.True(t, d.PermitsRequest())
	require.NoError(t, r.Close(ctx))
	_, err = r.Limiter().Check(ctx, check)
	require.ErrorIs(t, err, ports.ErrClosed)

	never, err := wiring.New(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, never.Close(ctx))
	_, err = never.Limiter().Check(ctx, check)
	require.ErrorIs(t, err, ports.ErrClosed)
	require.Nil(t, wiring.PoolOf(never))

	cfg.Postgres.MaxBatchSize = postgres.MaxBatchSizeLimit + 1
	_, err = wiring.New(ctx, cfg)
	var ce *wiring.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Postgres.MaxBatchSize", ce.Field)
}
