package wiring_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// TestEmptySettingBeforeThePasswordIsRefused: in a keyword/value string,
// as libpq reads it, a value left empty takes the next word, so a template
// whose variable was unset ("user=$USER password=$PASS") sets the user,
// the database or the host to "password=...". New accepted it, and
// Start's error and its log record printed it: "failed to connect to
// `user=password=Kx4pWv7L ...`", the server's role "password=..." does
// not exist, the resolver's lookup password=...; as application_name, the
// server shows it to every role in pg_stat_activity. New now refuses it,
// naming no part of it.
func TestEmptySettingBeforeThePasswordIsRefused(t *testing.T) {
	t.Parallel()
	const password = "Kx4pWv7Lq"
	for _, dsn := range []string{
		"host=db.example user= password=" + password + " dbname=app",
		"host=db.example user=app dbname= password=" + password,
		"host= password=" + password + " user=app dbname=app",
		"host=db.example user=app dbname=app application_name= password=" + password,
		"host=db.example user=app dbname=app options= \tpassword = " + password,
	} {
		_, err := wiring.New(context.Background(), wiring.Config{
			DatabaseURL: wiring.NewSecret(dsn), SecretEnv: setEnv(t, testSecret),
		})
		require.ErrorIs(t, err, wiring.ErrInvalidConfig, dsn)
		var ce *wiring.ConfigError
		require.ErrorAs(t, err, &ce, dsn)
		require.Equal(t, "DatabaseURL", ce.Field, dsn)
		leakcheck.Check(t, "the error of "+dsn, err, []byte(password))
	}
	// An empty value written as '' takes nothing.
	for _, dsn := range []string{
		"host=db.example user=app application_name='' password=" + password + " dbname=app",
		"host=db.example user=app dbname=passwords password=" + password,
	} {
		r, err := wiring.New(context.Background(), wiring.Config{
			DatabaseURL: wiring.NewSecret(dsn), SecretEnv: setEnv(t, testSecret),
		})
		require.NoError(t, err, dsn)
		require.NoError(t, r.Close(context.Background()))
	}
}
