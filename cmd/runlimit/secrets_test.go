package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// TestPasswordNeverPrintedOnAnyPath runs every subcommand down every error
// path it has (usage errors, bad flag values, stray arguments, a bad URL,
// an unreachable server, a missing or wrong schema, privileges the role
// lacks) with a database URL or keyword/value string that holds a password,
// given as the flag, through the environment or as a stray argument, and
// requires that the password appears on neither output.
func TestPasswordNeverPrintedOnAnyPath(t *testing.T) {
	t.Parallel()
	const password = "S3cr3t-pa55w0rd"
	db := pgtest.New(t)
	// A role the server knows, with a password, but no privileges on
	// Runlimit's objects: the commands connect and then fail.
	role := db.NewRole(t, "cli")
	u, err := url.Parse(role.URL)
	require.NoError(t, err)
	rolePassword, _ := u.User.Password()

	urls := map[string]string{
		"unreachable URL":         "postgres://runlimit:" + password + "@127.0.0.1:1/x?sslmode=disable&connect_timeout=5",
		"invalid URL":             "postgres://runlimit:" + password + "@127.0.0.1:notaport/x",
		"unreachable DSN":         "host=127.0.0.1 port=1 user=runlimit password=" + password + " dbname=x sslmode=disable connect_timeout=5",
		"quoted DSN":              "host=127.0.0.1 port=1 user=runlimit password='" + password + "' dbname=x sslmode=disable",
		"role without privileges": role.URL,
	}
	secrets := []string{password, rolePassword}

	type invocation struct {
		args []string
		env  bool // the URL comes from RUNLIMIT_DATABASE_URL
	}
	invocations := func(u string) map[string]invocation {
		return map[string]invocation{
			"unknown command":            {args: []string{u}},
			"unknown command, flag form": {args: []string{"--database-url=" + u}},
			"help with a stray URL":      {args: []string{"help", u}},
			"no command, env":            {env: true},
			"demo, flag":                 {args: []string{"demo", "--database-url", u}},
			"demo, positional":           {args: []string{"demo", u}},
			"demo, wrong schema":         {args: []string{"demo", "--database-url", u, "--schema", "no_such_schema"}},
			"demo, invalid schema":       {args: []string{"demo", "--database-url", u, "--schema", "pg_temp"}},
			"demo, help":                 {args: []string{"demo", "--database-url", u, "--help"}},
			"migrate, flag":              {args: []string{"migrate", "--database-url", u}},
			"migrate, env":               {args: []string{"migrate"}, env: true},
			"migrate, positional":        {args: []string{"migrate", u}},
			"migrate, positional + env":  {args: []string{"migrate", u}, env: true},
			"migrate, schema":            {args: []string{"migrate", "--database-url=" + u, "--schema", "limits"}},
			"migrate, flag as value":     {args: []string{"migrate", "--print-sql=" + u}},
			"migrate, print-sql and url": {args: []string{"migrate", "--print-sql", "--database-url", u}},
			"help, positional":           {args: []string{"help", u}},
			"version, positional":        {args: []string{"version", u}},
			"migrate, unknown flag":      {args: []string{"migrate", "--" + u}},
			"migrate, help, env":         {args: []string{"migrate", "-h"}, env: true},
			"cleanup, flag":              {args: []string{"cleanup", "--database-url", u}},
			"cleanup, env":               {args: []string{"cleanup"}, env: true},
			"cleanup, loop, env":         {args: []string{"cleanup", "--every", "1h"}, env: true},
			"cleanup, positional":        {args: []string{"cleanup", "--batch", "10", u}},
			"cleanup, bad batch":         {args: []string{"cleanup", "--batch", u}},
			"cleanup, bad every":         {args: []string{"cleanup", "--every=" + u}},
			"cleanup, bad timeout":       {args: []string{"cleanup", "--timeout", u}, env: true},
			"cleanup, wrong schema":      {args: []string{"cleanup", "--schema", "no_such_schema"}, env: true},
			"cleanup, invalid schema":    {args: []string{"cleanup", "--schema", u}, env: true},
			"status, flag":               {args: []string{"status", "--database-url", u}},
			"status, json, env":          {args: []string{"status", "--json"}, env: true},
			"status, positional":         {args: []string{"status", u}},
			"status, bad rows per shard": {args: []string{"status", "--rows-per-shard", u}},
			"status, wrong schema":       {args: []string{"status", "--database-url", u, "--schema", "no_such_schema"}},
			"status, empty flag, env":    {args: []string{"status", "--database-url="}, env: true},
		}
	}
	for urlName, u := range urls {
		for name, inv := range invocations(u) {
			t.Run(urlName+"/"+name, func(t *testing.T) {
				t.Parallel()
				env := noEnv
				if inv.env {
					env = envOf(map[string]string{envDatabaseURL: u})
				}
				r := execute(t, env, inv.args...)
				for _, secret := range secrets {
					require.NotContains(t, r.stdout, secret, "stdout")
					require.NotContains(t, r.stderr, secret, "stderr")
				}
				if strings.Contains(name, "help") {
					return
				}
				require.NotEqual(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
				require.NotEmpty(t, r.stderr)
			})
		}
	}
}

// A stray argument that looks like a URL is not quoted back, and the
// message says how to pass one.
func TestStrayURLIsNotQuoted(t *testing.T) {
	t.Parallel()
	r := execute(t, noEnv, "migrate", "postgres://u:S3cr3t-pa55w0rd@127.0.0.1:1/x")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "unexpected argument (a database URL? pass it with --database-url or $RUNLIMIT_DATABASE_URL)")
	require.NotContains(t, r.stderr, "S3cr3t")
}

// TestPasswordWithAnyCharacterNeverPrinted: a password holding a quote, a
// backslash, a space, a tab, a newline or non-ASCII letters is masked in
// every form the command's outputs could spell it. The flag package quotes
// a value it rejects with %q, which escapes such characters (se"cret is
// printed se\"cret), and a keyword/value string with an unquoted password
// holding a space is rejected with the password's second word quoted.
// Every URL form and invocation here needs no server: 127.0.0.1:1 refuses.
func TestPasswordWithAnyCharacterNeverPrinted(t *testing.T) {
	t.Parallel()
	passwords := []string{
		`Qz"k3v-Wp`, `Qz\k3v-Wp`, "Qz\tk3v-Wp", "Qz\nk3v-Wp", `Qz'k3v-Wp`, `Qz k3v-Wp`,
		`Qzé€k3v-Wp`, `Qz@k3v/Wp`, `Qz%k3v-Wp`, `Qz:k3v#Wp`, `Qz?k3v&Wp`, "Qz\x01k3v-Wp",
	}
	const query = "sslmode=disable&connect_timeout=5"
	forms := func(pw string) map[string]string {
		kvQuoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw)
		return map[string]string{
			"URL as typed":             "postgres://runlimit:" + pw + "@127.0.0.1:1/x?" + query,
			"URL, escaped":             (&url.URL{Scheme: "postgres", User: url.UserPassword("runlimit", pw), Host: "127.0.0.1:1", Path: "/x", RawQuery: query}).String(),
			"URL, query":               "postgres://runlimit@127.0.0.1:1/x?" + query + "&password=" + url.QueryEscape(pw),
			"DSN, quoted":              "host=127.0.0.1 port=1 user=runlimit password='" + kvQuoted + "' dbname=x sslmode=disable",
			"DSN, as typed":            "host=127.0.0.1 port=1 user=runlimit password=" + pw + " dbname=x sslmode=disable",
			"DSN, spaced '='":          "host=127.0.0.1 port=1 user=runlimit password = " + pw + " dbname=x sslmode=disable",
			"DSN, password at the end": "host=127.0.0.1 port=1 user=runlimit dbname=x password=" + pw,
		}
	}
	invocations := func(u string) map[string][]string {
		return map[string][]string{
			"unknown command": {u},
			"flag=value":      {"status", "--database-url=" + u},
			"flag value":      {"cleanup", "--database-url", u},
			"env":             {"migrate"},
			"duration flag":   {"cleanup", "--every", u},
			"duration flag=":  {"cleanup", "--every=" + u},
			"int flag":        {"cleanup", "--batch", u},
			"bool flag=":      {"status", "--json=" + u},
			"schema flag":     {"status", "--schema", u},
			"stray argument":  {"status", u},
			"unknown flag":    {"status", "--" + u},
			"demo":            {"demo", "--database-url", u},
		}
	}
	for _, pw := range passwords {
		for form, u := range forms(pw) {
			for name, args := range invocations(u) {
				r := execute(t, envOf(map[string]string{envDatabaseURL: u}), args...)
				for _, out := range []string{r.stdout, r.stderr} {
					for _, bad := range leakcheck.Renderings([]byte(pw)) {
						require.NotContains(t, out, bad, "password %q, %s, %s", pw, form, name)
					}
				}
				require.NotEqual(t, 0, r.code, "password %q, %s, %s", pw, form, name)
			}
		}
	}
}
