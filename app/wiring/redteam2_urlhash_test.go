package wiring_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// TestPasswordWithSlashAndHashIsRefused: a "#" does not start a fragment
// for pgx, which parses URLs as libpq does, and the check for a password
// that ends the host early cut the URL at its first "#" all the same. A
// password holding "/" after a run of digits and then "#", as in
// postgres://app:5433/xQ7#kpW9z@db/app, passed it, and pgx read the rest
// of the password as the database name, "xQ7#kpW9z@db/app", which every
// connection error prints. New now refuses it, as it refuses the same URL
// without the "#", and one whose password holds a "?" after the "/", whose
// middle pgx reads as the database name too, while the "@" hides in a
// parameter's value.
func TestPasswordWithSlashAndHashIsRefused(t *testing.T) {
	t.Parallel()
	const tail = "xQ7#kpW9z"
	for _, dsn := range []string{
		"postgres://app:5433/" + tail + "@db.example:5432/app",
		"postgres://app:5433/#" + tail + "@db.example:5432/app",
		"postgresql://app:5433/x#?a" + tail + "@db.example=1",
		// A "?" after the "/": the database name is the password's
		// middle, and the parameter's value, holding the "@", runs on
		// to the host and database.
		"postgres://app:5433/" + tail + "?w=1@db.example:5432/app",
	} {
		// What pgx makes of it: the database name, or the name of a
		// parameter the server rejects by name, holds the password's tail.
		pc, err := pgxpool.ParseConfig(dsn)
		require.NoError(t, err, dsn)
		require.True(t, strings.Contains(pc.ConnConfig.Database, tail) || anyKeyContains(pc.ConnConfig.RuntimeParams, tail),
			"pgx reads the tail as the database name or a parameter's name: %s", dsn)

		_, err = wiring.New(context.Background(), wiring.Config{
			DatabaseURL: wiring.NewSecret(dsn), SecretEnv: setEnv(t, testSecret),
		})
		require.ErrorIs(t, err, wiring.ErrInvalidConfig, dsn)
		var ce *wiring.ConfigError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "DatabaseURL", ce.Field)
		leakcheck.Check(t, "the error of "+dsn, err, []byte(tail))
	}
}

func anyKeyContains(m map[string]string, s string) bool {
	for k := range m {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}
