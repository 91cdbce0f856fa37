package migrations_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
)

// Migrate's errors hold no password, whether it cannot connect, cannot
// create the schema, or a step fails on the server.
func TestMigrateErrorsHoldNoPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const password = "S3cr3t-pa55w0rd"
	err := migrations.Migrate(ctx, config(t, "postgres://runlimit:"+password+"@127.0.0.1:1/x?sslmode=disable&connect_timeout=5"), "")
	require.Error(t, err)
	requireNoDriverError(t, err)
	leakcheck.Check(t, "connect error", err, []byte(password))

	// A role that may not create schemas.
	db := pgtest.NewEmpty(t)
	role := db.NewRole(t, "weak")
	u, err := url.Parse(role.URL)
	require.NoError(t, err)
	rolePassword, ok := u.User.Password()
	require.True(t, ok)
	err = migrations.Migrate(ctx, config(t, role.URL), "limits")
	var dbErr *postgres.DatabaseError
	require.ErrorAs(t, err, &dbErr)
	require.Equal(t, "42501", dbErr.Code) // insufficient_privilege
	requireNoDriverError(t, err)
	leakcheck.Check(t, "create schema error", err, []byte(rolePassword))

	// A step the server rejects: the table is already there.
	_, err = db.Pool.Exec(ctx, "CREATE TABLE runlimit_fixed_windows (x int)")
	require.NoError(t, err)
	err = migrations.MigratePool(ctx, db.Pool, "")
	require.ErrorAs(t, err, &dbErr)
	require.Equal(t, "42P07", dbErr.Code) // duplicate_table
	require.Contains(t, err.Error(), "001_fixed_windows.sql")
	requireNoDriverError(t, err)
	leakcheck.Check(t, "step error", err, []byte(rolePassword))
}

// requireNoDriverError requires that err holds none of the driver's errors
// that carry secrets: a server error (its detail), a connection error (its
// config) or a parse error (the connection string).
func requireNoDriverError(t *testing.T, err error) {
	t.Helper()
	var pgErr *pgconn.PgError
	var connectErr *pgconn.ConnectError
	var parseErr *pgconn.ParseConfigError
	require.False(t, errors.As(err, &pgErr), "a *pgconn.PgError is kept")
	require.False(t, errors.As(err, &connectErr), "a *pgconn.ConnectError is kept")
	require.False(t, errors.As(err, &parseErr), "a *pgconn.ParseConfigError is kept")
}
