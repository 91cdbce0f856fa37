package wiring_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// TestPasswordThatEndsTheHostEarlyIsRefused: a password holding "/" or
// "?" after a run of digits, written unencoded, ends the URL's authority
// early: postgres://app:5433/xQ7kpW9z@db/app parses as host "app", port
// 5433 and database "xQ7kpW9z@db/app", and the connection errors at Start,
// its log record and every admission's error printed the database name,
// the rest of the password. New now refuses such a URL, naming no part of
// it, before anything connects; an "@" in a parameter's value, or one
// percent-encoded in the database name, is still accepted.
func TestPasswordThatEndsTheHostEarlyIsRefused(t *testing.T) {
	t.Parallel()
	const tail = "xQ7kpW9z"
	for _, dsn := range []string{
		"postgres://app:5433/" + tail + "@db.example:5432/app",
		"postgresql://app:5433?" + tail + "@db.example:5432/app",
		"postgres://app:5433?sslmode=disable&" + tail + "@db.example=1",
		// pgx reads a "#" as part of the database name, as libpq does:
		// this one is "app#x@y", an unencoded "@" in it.
		"postgres://app@db.example:5432/app#x@y",
	} {
		_, err := wiring.New(context.Background(), wiring.Config{
			DatabaseURL: wiring.NewSecret(dsn), SecretEnv: setEnv(t, testSecret),
		})
		require.ErrorIs(t, err, wiring.ErrInvalidConfig, dsn)
		var ce *wiring.ConfigError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "DatabaseURL", ce.Field)
		leakcheck.Check(t, "the error of "+dsn, err, []byte(tail), []byte("5433/"+tail), []byte("5433?"+tail))
	}
	for _, dsn := range []string{
		"postgres://db.example:5432/app?user=app@server&password=5433/" + tail,
		"postgres://app:5433%2F" + tail + "@db.example:5432/app",
		"postgres://app@db.example:5432/team%40app",
		"postgres://app@db.example:5432/app#x%40y",
		"host=db.example user=app password=5433/" + tail + "@x dbname=app",
	} {
		r, err := wiring.New(context.Background(), wiring.Config{
			DatabaseURL: wiring.NewSecret(dsn), SecretEnv: setEnv(t, testSecret),
		})
		require.NoError(t, err, dsn)
		require.NoError(t, r.Close(context.Background()))
	}
}
