package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/ory/dockertest/v3"
)

// harness is what [Main] knows of the package's run.
var harness struct {
	// inMain says Main runs the tests: a test that finds no server is then
	// counted and skipped, and Main fails the run with one line of advice,
	// instead of every test failing with the whole message.
	inMain atomic.Bool
	// missed counts the tests that needed a server and found none.
	missed atomic.Int64
}

// advice is what to do without a server, in one line.
const advice = "set " + EnvURL + "=postgres://user:password@host:5432/postgres (a role that may CREATE DATABASE), " +
	"start a Docker engine, or run a local server at 127.0.0.1:5432 accepting user postgres without a password; " +
	"or run only the tests that need no server with make test-short (go test -short ./...)"

// noServer handles a test that needs a server when none can be found:
// under -short it is skipped; under Main it is counted and skipped, and
// Main fails the run; otherwise it fails with err.
func noServer(t testing.TB, err error) {
	t.Helper()
	if harness.inMain.Load() {
		harness.missed.Add(1)
		t.Skip("pgtest: no PostgreSQL server; the package fails at the end, saying why once")
	}
	t.Fatal(err)
}

// skipShort skips t under -short: a test that needs a server is never run
// by go test -short, whether or not a server answers.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("pgtest: needs PostgreSQL; skipped under -short")
	}
}

// report ends a package's run: one line saying which server the tests
// used, or, when tests needed one and found none, one line saying so and
// what to do, turning a passing run into a failing one.
func report(code int) int {
	if n := harness.missed.Load(); n > 0 {
		_, err := getServer()
		fmt.Fprintf(os.Stderr, "pgtest: %d test(s) need PostgreSQL and did not run (%s); %s\n", n, short(err), advice)
		if code == 0 {
			code = 1
		}
	}
	if shared.srv != nil {
		fmt.Fprintf(os.Stderr, "pgtest: the tests used %s\n", shared.srv.describe())
	}
	return code
}

// short is err's text without the advice errNoServer carries.
func short(err error) string {
	switch {
	case err == nil:
		return "no error"
	case errors.Is(err, errNoServer):
		return "no Docker engine, and nothing answers at 127.0.0.1:5432"
	default:
		return oneLine(err)
	}
}

// describe names the server: its version, where it is and how it was
// found, never a password.
func (s *server) describe() string {
	where := "an unknown address"
	if cfg, err := pgxpool.ParseConfig(s.adminURL); err == nil {
		where = fmt.Sprintf("%s:%d as user %s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.User)
	}
	return fmt.Sprintf("PostgreSQL %d.%d at %s (%s)", s.version/10000, s.version%10000, where, describeSource(s.source))
}

func describeSource(src Source) string {
	switch src {
	case FromEnvironment:
		return "from " + EnvURL
	case FromDocker:
		return "a disposable Docker container"
	default:
		return "the local server"
	}
}

// Probe finds the server the tests would use, in the same order, and
// describes it in one line; its error is one line of advice. It starts no
// container: a Docker engine that answers is reported as the source the
// tests will use. The Makefile's test target runs it first (go run
// ./internal/pgtest/pgprobe), so that a run without a server stops at once
// with one clear line.
func Probe(ctx context.Context) (string, error) {
	if u := os.Getenv(EnvURL); u != "" {
		s, err := connectServer(FromEnvironment, u, 5*time.Second)
		if err != nil {
			return "", fmt.Errorf("pgtest: %s is set but no PostgreSQL answers there (%v); %s", EnvURL, oneLine(err), advice)
		}
		defer s.admin.Close()
		return "pgtest: the PostgreSQL tests will use " + s.describe(), nil
	}
	if pool, err := dockertest.NewPool(""); err == nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if pool.Client.PingWithContext(pctx) == nil {
			return "pgtest: the PostgreSQL tests will start a disposable Docker container", nil
		}
	}
	s, err := connectServer(FromLocal, LocalURL, 3*time.Second)
	if err != nil {
		return "", fmt.Errorf("pgtest: no PostgreSQL server for the tests (%v); %s", oneLine(err), advice)
	}
	defer s.admin.Close()
	return "pgtest: the PostgreSQL tests will use " + s.describe(), nil
}

// oneLine is err's text on one line, runs of white space made one space. A
// network error is reduced to the network's own words ("dial tcp
// 127.0.0.1:5432: connect: connection refused"): the driver repeats it for
// every address and TLS mode it tried.
func oneLine(err error) string {
	var ne *net.OpError
	if errors.As(err, &ne) {
		err = ne
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}
