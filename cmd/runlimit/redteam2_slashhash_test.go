package main

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/leakcheck"
)

// TestPasswordSplitBySlashIsMasked: pgx parses a URL as libpq does, for
// which a "/" in the password ends the search for the user information and
// a "#" is an ordinary character. A password such as 5433/Pq#Xq9zz-Wp7,
// written unencoded, is then read as the port of a host named after the
// user, and its rest, up to the host it was meant for, as the database
// name, which the connection error prints. The redactor split the
// password into pieces only where Go's URL parser failed, and Go's
// parser, reading a fragment from the "#", did not: the rest of the
// password was printed whole. Every piece a "/" leaves is now masked.
func TestPasswordSplitBySlashIsMasked(t *testing.T) {
	t.Parallel()
	const password = "5433/Pq#Xq9zz-Wp7"
	for _, u := range []string{
		"postgres://runlimit:" + password + "@127.0.0.1:1/x?sslmode=disable&connect_timeout=5",
		"postgres://runlimit:5433/Pq@Xq9zz-Wp7@127.0.0.1:1/x?sslmode=disable&connect_timeout=5",
	} {
		pc, err := pgxpool.ParseConfig(u)
		require.NoError(t, err)
		require.Contains(t, pc.ConnConfig.Database, "Xq9zz-Wp7", "pgx reads the password's rest as the database name")
		got := urlSecrets(u).redact("failed to connect to `user=root database=" + pc.ConnConfig.Database + "`")
		for _, piece := range []string{"Pq#Xq9zz", "Xq9zz-Wp7", "Pq@Xq9zz", "Pq"} {
			require.NotContains(t, got, piece, u)
		}

		for _, args := range [][]string{
			{"status", "--database-url", u},
			{"migrate", "--database-url=" + u},
			{"cleanup", "--database-url", u},
		} {
			r := execute(t, noEnv, args...)
			require.Equal(t, 1, r.code, "stderr: %s", r.stderr)
			for _, out := range []string{r.stdout, r.stderr} {
				for _, bad := range leakcheck.Renderings([]byte(password[5:])) {
					require.NotContains(t, out, bad, "%v", args)
				}
			}
		}
	}
}
