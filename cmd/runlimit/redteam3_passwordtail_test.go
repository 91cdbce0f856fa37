package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
)

// TestPasswordTailIsNeverPrinted: a password that the connection string
// does not delimit, an unencoded "&" in a URL's query or an unquoted space
// in keyword/value form, ends early, and its tail is read as something
// else, which was printed: pgx's parse error quoted a query segment
// without "=", and the server's refusal quoted a startup parameter named
// or valued by the tail. No piece of the password reaches either output;
// the command still fails, and says why. (An empty setting that takes the
// password pair as its value is refused before anything connects: see
// TestEmptySettingBeforeThePasswordIsAUsageError.)
func TestPasswordTailIsNeverPrinted(t *testing.T) {
	t.Parallel()
	const head, tail = "Kx4pQ", "Wv7Lm2q"
	db := pgtest.NewEmpty(t)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	sep := "?"
	if u.RawQuery != "" {
		sep = "&"
	}
	kv := "host=" + u.Hostname() + " port=" + u.Port() + " user=" + u.User.Username() + " dbname=" + strings.TrimPrefix(u.Path, "/") + " connect_timeout=10"
	for name, dsn := range map[string]string{
		// pgx refuses the query: its error quoted the tail.
		"unreachable, query ampersand": "postgres://runlimit@127.0.0.1:1/x?sslmode=disable&password=" + head + "&" + tail,
		// pgx ends the user information at the first "@", so the rest of
		// the password, or a query read as user information, is a host
		// name the resolver's error prints.
		"at sign in the password":      "postgres://runlimit:" + head + "@" + tail + "@127.0.0.1:1/x?connect_timeout=5",
		"query before the path, at":    "postgres://127.0.0.1:1?user=app@server&password=" + head + tail + "&connect_timeout=5",
		"query swallowed as user info": "postgres://127.0.0.1:1?password=" + head + "&user=app@127.0.0.1:1&connect_timeout=5",
		// The rest reach the server, which refuses the startup packet.
		"query ampersand, parameter":      db.URL + sep + "password=" + head + "&" + tail + "=1",
		"keyword/value space, parameter":  kv + " password=" + head + " " + tail + "=1",
		"keyword/value space, known name": kv + " password=" + head + " timezone=" + tail,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, cmd := range []string{"status", "migrate", "cleanup"} {
				r := execute(t, noEnv, cmd, "--database-url", dsn)
				require.Equal(t, 1, r.code, "%s: %s", cmd, r.stderr)
				for _, piece := range []string{head, tail} {
					require.NotContains(t, r.stderr, piece, cmd)
					require.NotContains(t, r.stdout, piece, cmd)
				}
			}
		})
	}
}

// TestEmptySettingBeforeThePasswordIsAUsageError: in keyword/value form a
// setting left empty takes the next pair as its value, so
// "application_name= password=..." connected with the password as the
// session's application name, which pg_stat_activity shows every role,
// and "user= password=..." sent it as a role name to the server's log.
// The command now refuses such a string before it connects.
func TestEmptySettingBeforeThePasswordIsAUsageError(t *testing.T) {
	t.Parallel()
	const password = "Kx4pQWv7Lm2q"
	db := pgtest.NewEmpty(t)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	kv := "host=" + u.Hostname() + " port=" + u.Port() + " dbname=" + strings.TrimPrefix(u.Path, "/")
	for _, dsn := range []string{
		kv + " user=" + u.User.Username() + " application_name= password=" + password,
		kv + " user= password=" + password,
	} {
		for _, cmd := range []string{"status", "migrate", "cleanup"} {
			r := execute(t, noEnv, cmd, "--database-url", dsn)
			require.Equal(t, 2, r.code, "%s: %s", cmd, r.stderr)
			require.Contains(t, r.stderr, "left empty before its password")
			require.NotContains(t, r.stderr, password)
			require.NotContains(t, r.stdout, password)
		}
	}
}
