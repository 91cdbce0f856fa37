package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A query parameter whose name is percent-encoded sets the password as
// pgx reads it (pass%77ord is password): the command masked only a
// name written as "password", and only where Go's URL parser could read
// the argument, so a URL after a flag's name (--json=postgres://...),
// a host list only pgx reads, or an encoded sslpassword were printed back
// with the password by the flag package's complaint or the unknown
// command's.
func TestAnEncodedPasswordParameterIsMasked(t *testing.T) {
	t.Parallel()
	const pw = "Qz7k3vWp9"
	urls := []string{
		"postgres://u@127.0.0.1:1/x?pass%77ord=" + pw,
		"postgres://u@127.0.0.1:1/x?sslpass%77ord=" + pw,
		"postgres://u@127.0.0.1:1/x?%70assword=" + pw + "&sslmode=disable",
		"postgresql://u@127.0.0.1:1,127.0.0.1:1/x?pass%77ord=" + pw,
		"postgres://u@127.0.0.1:1/x?pass%77ord=Qz7k%2B" + pw,
	}
	for _, u := range urls {
		for _, args := range [][]string{{"status", "--json=" + u}, {"cleanup", "--every=" + u}, {u}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				r := execute(t, noEnv, args...)
				require.Equal(t, 2, r.code, "stderr: %s", r.stderr)
				require.NotContains(t, r.stdout+r.stderr, pw)
				require.NotContains(t, r.stdout+r.stderr, "Qz7k")
				require.Contains(t, r.stderr, mask)
			})
		}
	}
}

// A query parameter encoded whole, its "=" too (?password%3Dpw), sets no
// password, and pgx rejects the URL quoting the pair: the command printed
// the password back, whether the URL was the database flag's value, a
// stray argument or another flag's.
func TestAPasswordPairEncodedWholeIsMasked(t *testing.T) {
	t.Parallel()
	const pw = "Qz7k3vWp9"
	for _, u := range []string{
		"postgres://u@127.0.0.1:1/x?password%3D" + pw,
		"postgres://u@127.0.0.1:1/x?sslmode=disable&pass%77ord%3D" + pw,
	} {
		for _, args := range [][]string{{"status", "--database-url=" + u}, {"status", "--json=" + u}, {u}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				r := execute(t, noEnv, args...)
				require.NotEqual(t, 0, r.code, "stderr: %s", r.stderr)
				require.NotContains(t, r.stdout+r.stderr, pw)
				require.NotContains(t, r.stdout+r.stderr, "Qz7k")
				require.Contains(t, r.stderr, mask)
			})
		}
	}
}
