package wiring_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/internal/testkit"
)

// TestPasswordTailReadAsAParameterIsWithheld: a password written unencoded
// with a "&" in a URL's query, or unquoted with a space in a keyword/value
// string, ends early, and its tail becomes one more startup parameter. The
// server refuses the connection naming that parameter, or quoting its
// value, and the start error and its log record spelled that piece of the
// password. The connection failure still says what went wrong, without
// the parameter. (A setting left empty before the password, which takes
// the password pair as its value, is refused by New: see
// TestEmptySettingBeforeThePasswordIsRefused.)
func TestPasswordTailReadAsAParameterIsWithheld(t *testing.T) {
	t.Parallel()
	const head, tail = "Kx4pQ", "Wv7Lm2q"
	db := pgtest.NewEmpty(t)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	sep := "?"
	if u.RawQuery != "" {
		sep = "&"
	}
	user := u.User.Username()
	kv := "host=" + u.Hostname() + " port=" + u.Port() + " user=" + user + " dbname=" + u.Path[1:]
	if pw, ok := u.User.Password(); ok {
		kv += " password=" + pw
	}
	for name, dsn := range map[string]string{
		// The query's "&" ends the password; "Wv7Lm2q=1" is a parameter the
		// server does not know.
		"URL query, ampersand": db.URL + sep + "password=" + head + "&" + tail + "=1",
		// An unquoted space does the same in keyword/value form.
		"keyword/value, space": kv + " password=" + head + " " + tail + "=1",
		// A tail that names a parameter the server knows has its value
		// quoted back.
		"keyword/value, known parameter": kv + " password=" + head + " timezone=" + tail,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var logs testkit.LogBuffer
			r, err := wiring.New(context.Background(), wiring.Config{
				Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(dsn), SecretEnv: setEnv(t, testSecret),
				CleanupInterval: -1, Logger: logs.Logger(),
			})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = r.Start(ctx)
			require.Error(t, err)
			require.Contains(t, err.Error(), "(withheld: it came from the connection string")
			require.Contains(t, err.Error(), "(SQLSTATE ")
			leakcheck.Check(t, name+": the start error", err, []byte(head), []byte(tail))
			require.NotContains(t, logs.String(), head)
			require.NotContains(t, logs.String(), tail)
			require.NoError(t, r.Close(context.Background()))
		})
	}
}
