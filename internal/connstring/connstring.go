// Package connstring finds the shapes of a PostgreSQL connection string
// that pgx, as libpq, reads other than its author meant, so that a piece
// of the password lands where connection errors, server logs or
// pg_stat_activity print it: in a host name, a user or database name, or
// another setting. The wiring refuses such a string before anything
// connects, and the runlimit command refuses the ones whose printing it
// cannot mask.
package connstring

import (
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Misplaced reports a URL-form connection string with an "@" after its
// authority, in its host list, in the path or in a query parameter's
// name, or whose user information, as pgx reads it, swallowed a "?". Such
// a string parses, but not as its author meant. A password holding an
// unencoded "@", as in postgres://app:pa@ss@db/app, ends the user
// information at its first "@", so that the rest of the password becomes
// a host name, which the resolver's error prints. A password holding "/"
// or "?" (unencoded) after a run of digits, as in
// postgres://app:5433/pa55word@db/app, ends the authority early, so that
// the rest of the password becomes the database name, or a parameter's
// name, which the driver's and the server's connection errors print. An
// "@" in a parameter's value, as in ?user=name@server, is left alone when
// a path comes before the query and no "/" follows the "@" in the value.
// A host list that ends in an empty port, as pgx reads
// postgres://app:/?x=pa55@db (a password beginning with "/"), is the user
// name read as a host. A "#" starts no fragment: pgx parses URLs as libpq
// does, for which it is an ordinary character of the database name or a
// parameter.
func Misplaced(dsn string) bool {
	var rest string
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		if len(dsn) >= len(scheme) && strings.EqualFold(dsn[:len(scheme)], scheme) {
			rest = dsn[len(scheme):]
			break
		}
	}
	// pgx, as libpq, ends the user information at the first "@" that
	// comes before any "/", even one inside a password or what was meant
	// as the query, and reads hosts and ports from there to the next "/"
	// or "?". A password holding an unencoded "@" then leaves its rest in
	// the host, and a query read as user information (postgres://h?user=
	// a@b&password=...) leaves its parameters there or in the user name,
	// which the resolver's and the driver's connection errors print.
	hosts := rest
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		if strings.Contains(rest[:i], "?") {
			return true
		}
		hosts = rest[i+1:]
	}
	if i := strings.IndexAny(hosts, "/?"); i >= 0 {
		hosts = hosts[:i]
	}
	if strings.ContainsAny(hosts, "@&=") {
		return true
	}
	// A host followed by an empty port is what pgx makes of user
	// information with no "@" before the first "/" or "?": a password
	// that begins with one (postgres://app:/?x=pa55@db) leaves the user
	// name as the host and the password in the path or the query.
	if strings.HasSuffix(hosts, ":") {
		return true
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		return false
	}
	path, query, _ := strings.Cut(rest[end:], "?")
	if strings.Contains(path, "@") {
		return true
	}
	for _, param := range strings.Split(query, "&") {
		name, value, _ := strings.Cut(param, "=")
		if strings.Contains(name, "@") {
			return true
		}
		// A value that goes on after its "@" to a "/", as the host and
		// database a password was meant to precede do
		// (postgres://app:5433/pa55?word=x@db/app), is no user@server;
		// nor is one in a query that follows the host list with no path
		// between them, as the rest of a password beginning with "@" and
		// holding a "?" does (postgres://app:@?=@db: an empty password, an
		// empty host list, and the host in the query).
		if _, after, ok := strings.Cut(value, "@"); ok && (strings.Contains(after, "/") || path == "") {
			return true
		}
	}
	return false
}

// passwordPair matches a setting's value that is a keyword/value
// connection string's password pair.
var passwordPair = regexp.MustCompile(`(?i)^\s*password\s*=`)

// SwallowedPassword reports a parsed connection string in which a setting
// took the password pair as its value. In keyword/value form, as libpq
// reads it, a value left empty takes the next word: "user= password=pw"
// (a template whose variable was unset) sets the user name to
// "password=pw", and the driver's connection error names the user, the
// database and the host, as the server's does the role and the database.
func SwallowedPassword(cc *pgconn.Config) bool {
	values := []string{cc.User, cc.Database, cc.Host}
	for _, fb := range cc.Fallbacks {
		values = append(values, fb.Host)
	}
	for _, v := range cc.RuntimeParams {
		values = append(values, v)
	}
	for _, v := range values {
		if passwordPair.MatchString(v) {
			return true
		}
	}
	return false
}
