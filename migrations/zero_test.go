package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/migrations"
)

// TestNilArguments: a nil context, connection config, pool or querier
// used to panic; each is an error matching ErrNilArgument, found before
// any connection is made. An invalid schema name is still reported first.
func TestNilArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var nilCtx context.Context
	var nilPool *pgxpool.Pool
	var nilConn *pgx.Conn
	config, err := pgx.ParseConfig("postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err)

	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"Migrate nil config", func() error { return migrations.Migrate(ctx, nil, "") }, migrations.ErrNilArgument},
		{"Migrate nil ctx", func() error { return migrations.Migrate(nilCtx, config, "") }, migrations.ErrNilArgument},
		{"Migrate bad schema and nil config", func() error { return migrations.Migrate(ctx, nil, "pg_x") }, migrations.ErrInvalidSchema},
		{"MigratePool nil pool", func() error { return migrations.MigratePool(ctx, nil, "") }, migrations.ErrNilArgument},
		{"MigratePool nil ctx and pool", func() error { return migrations.MigratePool(nilCtx, nil, "") }, migrations.ErrNilArgument},
		{"MigratePool bad schema", func() error { return migrations.MigratePool(ctx, nil, "1x") }, migrations.ErrInvalidSchema},
		{"RustMigrated nil querier", func() error { _, err := migrations.RustMigrated(ctx, nil, ""); return err }, migrations.ErrNilArgument},
		{"RustMigrated nil pool", func() error { _, err := migrations.RustMigrated(ctx, nilPool, ""); return err }, migrations.ErrNilArgument},
		{"RustMigrated nil conn", func() error { _, err := migrations.RustMigrated(ctx, nilConn, ""); return err }, migrations.ErrNilArgument},
		{"RustMigrated nil ctx", func() error { _, err := migrations.RustMigrated(nilCtx, nilPool, ""); return err }, migrations.ErrNilArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var err error
			require.NotPanics(t, func() { err = tc.call() })
			require.ErrorIs(t, err, tc.want)
		})
	}
}
