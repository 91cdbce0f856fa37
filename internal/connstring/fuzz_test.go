package connstring_test

import (
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/connstring"
)

// FuzzPasswordStaysInItsField writes a password as an author would, raw,
// into a URL or a keyword/value string, and requires that a string the
// package does not flag (the wiring refuses the flagged ones) is read by
// pgx with that password whole, and that no field a connection error,
// the server's log or pg_stat_activity prints (host, port, user,
// database, any setting's name or value) spells it.
func FuzzPasswordStaysInItsField(f *testing.F) {
	for _, pw := range []string{
		"pw", "pa@ss", "5433/pa55@db", "pa?ss", "pa#ss", "pa/ss", "pa:ss", "pa&ss=x", "pa ss", "pa'ss", `pa\ss`,
		"pa%40ss", "pa%zz", " ", " pa ss ", "@", "x@y/z", "pa,ss", "[::1]", "a=b", "",
	} {
		for form := range uint8(6) {
			f.Add(pw, form)
		}
	}
	f.Fuzz(func(t *testing.T, pw string, form uint8) {
		if pw == "" {
			// No secret; in keyword/value form the next pair becomes
			// the password, which is the author's mistake, not a leak.
			return
		}
		var dsn string
		switch form % 6 {
		case 0:
			dsn = "postgres://app:" + pw + "@127.0.0.1:1/db"
		case 1:
			dsn = "postgresql://app:" + pw + "@127.0.0.1:1,127.0.0.2:2/db?sslmode=disable"
		case 2:
			dsn = "postgres://app:" + pw + "@[::1]:1/db?application_name=x&connect_timeout=5"
		case 3:
			dsn = "postgres://app:" + pw + "@127.0.0.1:1"
		case 4:
			dsn = "host=127.0.0.1 port=1 user=app password=" + pw + " dbname=db"
		case 5:
			dsn = "host=127.0.0.1 port=1 user=app dbname=db password=" + pw
		}
		cc, err := pgconn.ParseConfig(dsn)
		if err != nil || connstring.Misplaced(dsn) || connstring.SwallowedPassword(cc) {
			return
		}
		// A "%" is a URL's escape, and a quote, a backslash or a space is
		// keyword/value syntax: the password read differs from the one
		// written, and the printing below is what matters. pgx trims the
		// spaces around a URL's password.
		// A password of digits up to a "/" reads as a port and a path, and
		// one whose query then holds an "@" is indistinguishable from a
		// URL with user=name@server in its query, which Misplaced leaves
		// alone: that the password is not printed is all that is required.
		portAndPath := regexp.MustCompile(`^ *[0-9]* */`).MatchString(pw)
		if form%6 < 4 && !strings.Contains(pw, "%") && !portAndPath {
			require.Equal(t, strings.Trim(pw, " "), cc.Password, "%q", dsn)
		}
		if form%6 >= 4 && strings.IndexFunc(pw, func(r rune) bool { return r == '\'' || r == '\\' || unicode.IsSpace(r) }) < 0 {
			require.Equal(t, pw, cc.Password, "%q", dsn)
		}
		if len(pw) < 3 || strings.Contains(dsn[:strings.Index(dsn, pw)], pw) ||
			strings.Contains("127.0.0.1 127.0.0.2 ::1 app db sslmode disable prefer application_name x connect_timeout 5", pw) {
			return // the password is spelled by the rest of the string too
		}
		printed := []string{cc.Host, cc.User, cc.Database}
		for _, fb := range cc.Fallbacks {
			printed = append(printed, fb.Host)
		}
		for k, v := range cc.RuntimeParams {
			printed = append(printed, k, v)
		}
		for _, s := range printed {
			require.NotContains(t, s, pw, "%q", dsn)
		}
	})
}
