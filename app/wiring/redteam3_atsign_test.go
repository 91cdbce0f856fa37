package wiring_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// TestPasswordReadAsAHostIsRefused: pgx, as libpq, ends a URL's user
// information at the first "@" before any "/", so that a password holding
// an unencoded "@" leaves its rest in the host name, and a query that comes
// before any path (postgres://h?user=app@server&password=...) is read as
// user information, leaving its parameters in the host or the user name.
// New accepted both, and Start's error, its log record and every
// admission's error printed the host or the user: "lookup
// 7Wv3Lm2@127.0.0.1: no such host". New now refuses them, naming no part
// of them, before anything connects.
func TestPasswordReadAsAHostIsRefused(t *testing.T) {
	t.Parallel()
	const tail = "Wv7Lm2qZ"
	for _, dsn := range []string{
		"postgres://app:Kx4p@" + tail + "@127.0.0.1:5432/app",
		"postgresql://app:Kx4p@" + tail + "@db.example/app?sslmode=disable",
		"postgres://app:Kx4p@" + tail + "@h1,h2:5433/app",
		"postgres://127.0.0.1:5432?user=app@server&password=" + tail,
		"postgres://db.example?password=" + tail + "&user=app@server",
		"postgres://db.example?user=app@server&password=" + tail + "/x",
	} {
		_, err := wiring.New(context.Background(), wiring.Config{
			DatabaseURL: wiring.NewSecret(dsn), SecretEnv: setEnv(t, testSecret),
		})
		require.ErrorIs(t, err, wiring.ErrInvalidConfig, dsn)
		var ce *wiring.ConfigError
		require.ErrorAs(t, err, &ce, dsn)
		require.Equal(t, "DatabaseURL", ce.Field, dsn)
		leakcheck.Check(t, "the error of "+dsn, err, []byte(tail))
	}
	// An "@" percent-encoded in the password, or in a parameter's value
	// after a path, still parses as its author meant.
	for _, dsn := range []string{
		"postgres://app:Kx4p%40" + tail + "@db.example:5432/app",
		"postgres://db.example:5432/app?user=app@server&password=" + tail,
		"postgres://[2001:db8::1]:5432,db.example/app",
	} {
		r, err := wiring.New(context.Background(), wiring.Config{
			DatabaseURL: wiring.NewSecret(dsn), SecretEnv: setEnv(t, testSecret),
		})
		require.NoError(t, err, dsn)
		require.NoError(t, r.Close(context.Background()))
	}
}
