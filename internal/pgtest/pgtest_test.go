package pgtest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// requireDropped checks that the database of a test that has ended is
// gone once Main's drops have run, which it runs itself: they drop only
// databases whose tests have ended.
func requireDropped(t *testing.T, name string) {
	t.Helper()
	srv, err := getServer()
	require.NoError(t, err)
	srv.deferred.Lock()
	kept := slices.Contains(srv.deferred.names, name)
	srv.deferred.Unlock()
	require.True(t, kept, "the database of a test that ended under Main was not kept for Main to drop")
	require.NoError(t, srv.dropDeferred())
	var exists bool
	require.NoError(t, srv.admin.QueryRow(context.Background(),
		"SELECT EXISTS (SELECT FROM pg_catalog.pg_database WHERE datname = $1)", name).Scan(&exists))
	require.False(t, exists, "the test's database outlived the test")
}

// TestStaleDatabasesAreDropped: a run that ends before Main drops its
// databases leaves them behind; the next run drops those older than
// staleAfter, and leaves younger ones (another run's, still in use) and
// databases whose names carry no creation time alone.
func TestStaleDatabasesAreDropped(t *testing.T) {
	skipShort(t)
	srv, err := getServer()
	require.NoError(t, err)
	ctx := context.Background()
	now := time.Now()
	stale := fmt.Sprintf("%s%d_%s", testDatabasePrefix, now.Add(-staleAfter-time.Minute).Unix(), randomSuffix())
	young := fmt.Sprintf("%s%d_%s", testDatabasePrefix, now.Add(-staleAfter+time.Minute).Unix(), randomSuffix())
	unstamped := testDatabasePrefix + "x" + randomSuffix()
	for _, name := range []string{stale, young, unstamped} {
		_, err := srv.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
		require.NoError(t, err)
		t.Cleanup(func() { _ = srv.dropDatabase(name) })
	}
	srv.dropStale(ctx)
	for name, want := range map[string]bool{stale: false, young: true, unstamped: true} {
		var exists bool
		require.NoError(t, srv.admin.QueryRow(ctx,
			"SELECT EXISTS (SELECT FROM pg_catalog.pg_database WHERE datname = $1)", name).Scan(&exists))
		require.Equal(t, want, exists, name)
	}
}
