package main

import (
	"net"
	"net/url"
	"strings"
	"testing"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/leakcheck"
)

// onlyRefusingPort reports whether every server dsn names, as pgx reads
// it, is port 1 of a loopback address, which refuses at once: a password
// that moves the host or the port elsewhere (onto the test server, a
// socket or a name to resolve) is not run.
func onlyRefusingPort(dsn string) bool {
	cc, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return true // nothing connects
	}
	ok := func(host string, port uint16) bool {
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback() && port == 1
	}
	if !ok(cc.Host, cc.Port) {
		return false
	}
	for _, fb := range cc.Fallbacks {
		if !ok(fb.Host, fb.Port) {
			return false
		}
	}
	return true
}

// FuzzCommandNeverPrintsPassword runs the command with a password of any
// bytes, written into a database URL or keyword/value string in each way
// an operator might (raw, percent-encoded, in the query, quoted or not),
// given to each subcommand as the flag, a flag's value, a stray argument,
// an unknown flag or the environment, and requires that no window of the
// password, in any spelling fmt uses, is printed that the same run with an
// unrelated password does not print too, and that the run fails with a
// message.
func FuzzCommandNeverPrintsPassword(f *testing.F) {
	for _, pw := range []string{
		`S3cr3t-pa55w0rd`, `Qz"k3v-Wp`, `Qz\k3v-Wp`, "Qz\tk3v-Wp", "Qz\nk3v-Wp", `Qz'k3v-Wp`, `Qz k3v-Wp`,
		`Qzé€k3v-Wp`, `Qz@k3v/Wp`, `Qz%k3v-Wp`, `Qz:k3v#Wp`, `Qz?k3v&Wp`, "Qz\x01k3v-Wp", "Qz%40k3v%2FWp",
		"Qzk3v=Wp x", "Qz k3v=Wp", "Qz+k3v+Wp", "Qz\xffk3v-Wp", "Qz''k3v", `Qz\'k3v Wp`, "1/Qzk3v@Wp",
	} {
		for form := range uint8(8) {
			f.Add(pw, form, form)
		}
	}
	f.Fuzz(func(t *testing.T, pw string, form, invocation uint8) {
		if len(pw) < leakcheck.Window || len(pw) > 64 {
			return
		}
		const query = "sslmode=disable&connect_timeout=5"
		dsn := func(pw string) string {
			switch form % 8 {
			case 0:
				return "postgres://runlimit:" + pw + "@127.0.0.1:1/x?" + query
			case 1:
				return (&url.URL{Scheme: "postgres", User: url.UserPassword("runlimit", pw), Host: "127.0.0.1:1", Path: "/x", RawQuery: query}).String()
			case 2:
				return "postgres://runlimit@127.0.0.1:1/x?" + query + "&password=" + url.QueryEscape(pw)
			case 3:
				return "postgres://runlimit@127.0.0.1:1/x?" + query + "&password=" + pw
			case 4:
				return "host=127.0.0.1 port=1 user=runlimit password='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw) + "' dbname=x sslmode=disable"
			case 5:
				return "host=127.0.0.1 port=1 user=runlimit password=" + pw + " dbname=x sslmode=disable"
			case 6:
				return "host=127.0.0.1 port=1 user=runlimit dbname=x password = " + pw
			default:
				return "postgresql://runlimit:" + pw + "@127.0.0.1:1,[::1]:1/x"
			}
		}
		u := dsn(pw)
		if !onlyRefusingPort(u) {
			return
		}
		invocations := [][]string{
			{u},
			{"--database-url=" + u},
			{"status", "--database-url=" + u},
			{"cleanup", "--database-url", u},
			{"migrate"},
			{"cleanup", "--every", u},
			{"cleanup", "--every=" + u},
			{"cleanup", "--batch", u},
			{"status", "--json=" + u},
			{"status", "--schema", u},
			{"migrate", "--schema=" + u},
			{"status", u},
			{"status", "--" + u},
			{"demo", "--database-url", u},
			{"demo", u},
			{"help", u},
			{"version", u},
		}
		args := invocations[int(invocation)%len(invocations)]
		runWith := func(u string, args []string) (string, int) {
			var stdout, stderr strings.Builder
			code := run(t.Context(), args, envOf(map[string]string{envDatabaseURL: u}), &stdout, &stderr)
			return stdout.String() + "\x00" + stderr.String(), code
		}
		out, code := runWith(u, args)
		require.NotEqual(t, 0, code, "%q: %s", args, out)
		require.NotEmpty(t, strings.TrimPrefix(out, "\x00"), "%q", args)

		// The same run with a password of the same shape, each letter and
		// digit replaced by a J: what it prints (the command's own text,
		// the separators that give the string its shape, and the mask
		// itself next to them, for a password spelling "xxxxx") is not a
		// leak.
		neutral := strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return 'J'
			}
			return r
		}, pw)
		nu := dsn(neutral)
		neutralArgs := make([]string, len(args))
		for i, a := range args {
			neutralArgs[i] = strings.ReplaceAll(a, u, nu)
		}
		baseline, _ := runWith(nu, neutralArgs)
		for _, bad := range leakcheck.Renderings([]byte(pw)) {
			if strings.Contains(baseline, bad) || strings.Contains(usage, bad) {
				continue
			}
			require.NotContains(t, out, bad, "password %q in %q", pw, args)
		}
	})
}
