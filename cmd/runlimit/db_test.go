package main

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// noEnv is an empty environment: no test depends on the one it runs in.
func noEnv(string) string { return "" }

// envOf returns an environment holding vars.
func envOf(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// result is what one run of the command did.
type result struct {
	code           int
	stdout, stderr string
}

// execute runs the command in-process with the environment getenv.
func execute(t *testing.T, getenv func(string) string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, getenv, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// lineWriter is an output written by a command running in another
// goroutine: it hands each complete line to the test through lines, and
// keeps everything for the end.
type lineWriter struct {
	mu      sync.Mutex
	all     bytes.Buffer
	partial string
	lines   chan string
}

func newLineWriter() *lineWriter { return &lineWriter{lines: make(chan string, 1024)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(p)
	w.partial += string(p)
	for {
		line, rest, ok := strings.Cut(w.partial, "\n")
		if !ok {
			break
		}
		w.partial = rest
		select {
		case w.lines <- line:
		default: // the test stopped listening
		}
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.String()
}

func TestDatabaseCommandsNeedAURL(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"migrate", "cleanup", "status"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			r := execute(t, noEnv, cmd)
			require.Equal(t, 2, r.code)
			require.Contains(t, r.stderr, "no database: pass --database-url")
			require.Contains(t, r.stderr, "RUNLIMIT_DATABASE_URL")
			require.Empty(t, r.stdout)

			r = execute(t, noEnv, cmd, "--database-url=")
			require.Equal(t, 2, r.code)
			require.Contains(t, r.stderr, "--database-url is empty")
		})
	}
}

func TestDatabaseURLComesFromTheFlagThenTheEnvironment(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	unreachable := "postgres://runlimit@127.0.0.1:1/nowhere?sslmode=disable&connect_timeout=5"

	r := execute(t, envOf(map[string]string{envDatabaseURL: db.URL}), "status")
	require.Equal(t, 0, r.code, "the environment supplies the URL: %s", r.stderr)
	require.Contains(t, r.stdout, "schema version")

	r = execute(t, envOf(map[string]string{envDatabaseURL: unreachable}), "status", "--database-url", db.URL)
	require.Equal(t, 0, r.code, "the flag wins over the environment: %s", r.stderr)

	r = execute(t, envOf(map[string]string{envDatabaseURL: unreachable}), "status")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "runlimit status: connect to the database: ")
}

// TestNoPasswordIsEverPrinted runs every database command against URLs
// holding a password that cannot work (an unreachable server, a malformed
// URL, a role the server rejects) and requires that no form of the password
// reaches either output.
func TestNoPasswordIsEverPrinted(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	// A role the test server does not have: the server itself answers.
	rejected := db.URL + " user=no_such_role password=S3cr3t-pa55w0rd"
	if u, err := url.Parse(db.URL); err == nil && u.Scheme != "" {
		u.User = url.UserPassword("no_such_role", "S3cr3t-pa55w0rd")
		rejected = u.String()
	}

	urls := []struct {
		name    string
		url     string
		secrets []string
	}{
		{"unreachable", "postgres://runlimit:S3cr3t-pa55w0rd@127.0.0.1:1/x?sslmode=disable", []string{"S3cr3t-pa55w0rd"}},
		{"rejected by the server", rejected, []string{"S3cr3t-pa55w0rd"}},
		{"invalid port", "postgres://runlimit:S3cr3t-pa55w0rd@127.0.0.1:notaport/x", []string{"S3cr3t-pa55w0rd"}},
		{"at sign in the password", "postgres://runlimit:S3cr3t@pa55w0rd@127.0.0.1:1/x", []string{"S3cr3t@pa55w0rd", "pa55w0rd"}},
		{"percent-encoded", "postgres://runlimit:S3cr3t%2Fpa55w0rd@127.0.0.1:1/x?sslmode=disable", []string{"S3cr3t%2Fpa55w0rd", "S3cr3t/pa55w0rd"}},
		{"in the query", "postgres://runlimit@127.0.0.1:1/x?sslmode=disable&password=S3cr3t-pa55w0rd", []string{"S3cr3t-pa55w0rd"}},
		{"keyword/value", "host=127.0.0.1 port=1 user=runlimit password=S3cr3t-pa55w0rd dbname=x sslmode=disable", []string{"S3cr3t-pa55w0rd"}},
		{"keyword/value quoted", "host=127.0.0.1 port=1 user=runlimit password='S3cr3t pa55w0rd' dbname=x sslmode=disable", []string{"S3cr3t pa55w0rd"}},
		{"keyword/value malformed", "host=127.0.0.1 port=1 password='S3cr3t-pa55w0rd", []string{"S3cr3t-pa55w0rd"}},
	}
	commands := [][]string{{"migrate"}, {"cleanup"}, {"cleanup", "--every", "1h"}, {"status"}, {"status", "--json"}, {"demo"}}
	for _, u := range urls {
		for _, cmd := range commands {
			t.Run(u.name+"/"+strings.Join(cmd, " "), func(t *testing.T) {
				t.Parallel()
				for _, viaEnv := range []bool{false, true} {
					if viaEnv && cmd[0] == "demo" {
						continue // the demo reads only the flag
					}
					args, env := append([]string{}, cmd...), noEnv
					if viaEnv {
						env = envOf(map[string]string{envDatabaseURL: u.url})
					} else {
						args = append(args, "--database-url", u.url)
					}
					r := execute(t, env, args...)
					require.Equal(t, 1, r.code, "stderr: %s", r.stderr)
					require.NotEmpty(t, r.stderr)
					require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
					for _, secret := range u.secrets {
						require.NotContains(t, r.stderr, secret)
						require.NotContains(t, r.stdout, secret)
					}
				}
			})
		}
	}
}

func TestRedactorMasksEveryFormOfThePassword(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, url, text string
	}{
		{"url", "postgres://u:pw-1234@h/db", "cannot use pw-1234 at postgres://u:pw-1234@h/db"},
		{"percent-encoded", "postgres://u:pw%40x@h/db", "pw%40x or pw@x"},
		{"plus in the query", "postgres://h/db?password=a+b", "a+b or a b"},
		{"malformed url", "postgres://u:p/w@x@h:bad/db", "p/w@x"},
		{"keyword/value", "host=h password = pw-1234 user=u", "pw-1234"},
		{"quoted keyword/value", `host=h password='p\'w x' user=u`, `p\'w x or p'w x`},
		{"keyword/value tail read as a setting", "host=h password=pw-1 ab=pw-2 dbname=db", `invalid value "host=h password=pw-1 ab=pw-2 dbname=db"`},
		{"query password beginning with an ampersand", "postgres://h/db?password=&pw-2", `missing key/value separator "=" in URI query parameter: "pw-2"`},
		{"query password cut by a URL's parser", "postgres://h:1/db?password=%@pw-2", "cannot parse `postgres://h:xxxxx@pw-2`"},
		{"query tail read as a setting", "postgres://h/db?password=pw-1&ab=pw-2&sslmode=disable", "postgres://h/db?password=pw-1&ab=pw-2&sslmode=disable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := urlSecrets(tt.url).redact(tt.text)
			require.NotContains(t, got, "pw")
			require.NotContains(t, got, "a+b")
			require.NotContains(t, got, "a b")
			require.NotContains(t, got, "p/w")
			require.Contains(t, got, mask)
		})
	}
	// Secrets that overlap in the text are masked together: the longer one
	// masked first does not leave the tail of the shorter.
	require.Equal(t, "at h:xxxxx!", redactor{"1/x?password=0", "0@22222"}.mask("at h:1/x?password=0@22222!"))
	require.Equal(t, "no secret here", urlSecrets("postgres://u@h/db").redact("no secret here"))
	require.Equal(t, "line one: two; three", redactor(nil).redact("line one:\n\ttwo\n\tthree"))
}
