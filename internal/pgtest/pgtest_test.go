package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Main(m) }

func TestDatabaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, admin, want string
	}{
		{"url", "postgres://u:p@h:5432/postgres?sslmode=disable", "postgres://u:p@h:5432/db1?sslmode=disable"},
		{"postgresql scheme without path", "postgresql://h", "postgresql://h/db1"},
		{"dbname in query", "postgres://h/x?dbname=y&sslmode=disable", "postgres://h/db1?sslmode=disable"},
		{"keyword value", "host=h user=u dbname=postgres", "host=h user=u dbname=postgres dbname=db1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := databaseURL(tt.admin, "db1")
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestNewIsMigratedAndDropped(t *testing.T) {
	t.Parallel()
	skipShort(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		db := New(t)
		name = db.Name
		var shards int
		require.NoError(t, db.Pool.QueryRow(context.Background(),
			"SELECT count(*) FROM runlimit_capacity_shards").Scan(&shards))
		require.Equal(t, 256, shards)
		var current string
		require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT current_database()").Scan(&current))
		require.Equal(t, db.Name, current)
	})
	require.NotEmpty(t, name)
	requireDropped(t, name)
}

func TestNewEmptyHasNoSchema(t *testing.T) {
	t.Parallel()
	skipShort(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		db := NewEmpty(t)
		name = db.Name
		var tables int
		require.NoError(t, db.Pool.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename LIKE 'runlimit%'").Scan(&tables))
		require.Zero(t, tables)
	})
	requireDropped(t, name)
}

func TestDatabasesAreIsolated(t *testing.T) {
	t.Parallel()
	a, b := New(t), New(t)
	require.NotEqual(t, a.Name, b.Name)
	ctx := context.Background()
	_, err := a.Pool.Exec(ctx, "UPDATE runlimit_capacity_shards SET row_count = 7 WHERE capacity_shard = 3")
	require.NoError(t, err)
	var rows int64
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT row_count FROM runlimit_capacity_shards WHERE capacity_shard = 3").Scan(&rows))
	require.Zero(t, rows)
}

func TestNewPoolAppliesConfiguration(t *testing.T) {
	t.Parallel()
	db := New(t)
	pool := db.NewPool(t, func(c *pgxpool.Config) { c.ConnConfig.RuntimeParams["application_name"] = "pgtest-probe" })
	var app string
	require.NoError(t, pool.QueryRow(context.Background(), "SHOW application_name").Scan(&app))
	require.Equal(t, "pgtest-probe", app)
}

func requireDropped(t *testing.T, name string) {
	t.Helper()
	srv, err := getServer()
	require.NoError(t, err)
	var exists bool
	require.NoError(t, srv.admin.QueryRow(context.Background(),
		"SELECT EXISTS (SELECT FROM pg_catalog.pg_database WHERE datname = $1)", name).Scan(&exists))
	require.False(t, exists, "the test's database outlived the test")
}
