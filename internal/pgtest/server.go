package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"
	"go.uber.org/goleak"
)

// EnvURL names the environment variable holding the URL of the server to
// test against.
const EnvURL = "RUNLIMIT_POSTGRES_TEST_DATABASE_URL"

// LocalURL is the server tried last, a local PostgreSQL with trust
// authentication.
const LocalURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Source says where the server came from.
type Source string

// Sources of a test server.
const (
	FromEnvironment Source = "environment"
	FromDocker      Source = "docker"
	FromLocal       Source = "local"
)

// server is the one PostgreSQL server of a test binary.
type server struct {
	source   Source
	adminURL string
	admin    *pgxpool.Pool // on adminURL's database; creates and drops the others
	version  int           // server_version_num
	purge    func()        // removes a container this binary started

	templateOnce sync.Once
	template     string
	templateErr  error
}

var shared struct {
	once sync.Once
	srv  *server
	err  error
}

// errNoServer is the message a test gets when no server can be found.
var errNoServer = errors.New("pgtest: no PostgreSQL server for the tests. Provide one of: " +
	EnvURL + "=postgres://user:password@host:5432/postgres (a role that may CREATE DATABASE); " +
	"a running Docker engine (a postgres container is started for the run); " +
	"or a local server at 127.0.0.1:5432 accepting user postgres without a password")

// getServer finds the server once per test binary.
func getServer() (*server, error) {
	shared.once.Do(func() { shared.srv, shared.err = findServer() })
	return shared.srv, shared.err
}

func findServer() (*server, error) {
	if u := os.Getenv(EnvURL); u != "" {
		// An explicit URL is never second-guessed: if it does not answer,
		// the tests fail rather than quietly using another server.
		s, err := connectServer(FromEnvironment, u, 10*time.Second)
		if err != nil {
			return nil, fmt.Errorf("pgtest: %s is set but unusable: %w", EnvURL, err)
		}
		return s, nil
	}
	if u, purge, ok, err := startContainer(); ok {
		if err != nil {
			return nil, fmt.Errorf("pgtest: a Docker engine answered but its PostgreSQL container did not: %w", err)
		}
		s, err := connectServer(FromDocker, u, 10*time.Second)
		if err != nil {
			purge()
			return nil, fmt.Errorf("pgtest: PostgreSQL container: %w", err)
		}
		s.purge = purge
		return s, nil
	}
	s, err := connectServer(FromLocal, LocalURL, 3*time.Second)
	if err != nil {
		return nil, fmt.Errorf("%w (local server: %v)", errNoServer, err)
	}
	return s, nil
}

func connectServer(src Source, adminURL string, timeout time.Duration) (*server, error) {
	cfg, err := pgxpool.ParseConfig(adminURL)
	if err != nil {
		return nil, fmt.Errorf("parse URL: %w", err)
	}
	cfg.MaxConns = 4
	cfg.MinConns = 0
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var version int
	if err := pool.QueryRow(ctx, "SELECT pg_catalog.current_setting('server_version_num')::int").Scan(&version); err != nil {
		pool.Close()
		return nil, err
	}
	return &server{source: src, adminURL: adminURL, admin: pool, version: version}, nil
}

// startContainer starts a disposable server when a Docker engine answers. ok
// is false when there is no engine to ask.
func startContainer() (adminURL string, purge func(), ok bool, err error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return "", nil, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if pool.Client.PingWithContext(ctx) != nil {
		return "", nil, false, nil
	}
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: "postgres",
		Tag:        "16-alpine",
		Env:        []string{"POSTGRES_HOST_AUTH_METHOD=trust"},
		// Durability is pointless for a disposable server; speed is not.
		Cmd:    []string{"postgres", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "max_connections=200"},
		Labels: map[string]string{"org.runlimit.pgtest": "1"},
	}, func(hc *docker.HostConfig) {
		hc.AutoRemove = true
		hc.RestartPolicy = docker.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return "", nil, true, err
	}
	purge = func() {
		_ = pool.Purge(res)
		// The Docker client's keep-alive connections would outlive the
		// run, and Main's leak check would count their goroutines.
		if pool.Client.HTTPClient != nil {
			pool.Client.HTTPClient.CloseIdleConnections()
		}
	}
	adminURL = "postgres://postgres@" + res.GetHostPort("5432/tcp") + "/postgres?sslmode=disable"
	pool.MaxWait = time.Minute
	err = pool.Retry(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	})
	if err != nil {
		purge()
		return "", nil, true, err
	}
	return adminURL, purge, true, nil
}

// databaseURL returns the admin URL pointed at database name. Both URL and
// keyword/value connection strings are understood.
func databaseURL(adminURL, name string) (string, error) {
	if strings.HasPrefix(adminURL, "postgres://") || strings.HasPrefix(adminURL, "postgresql://") {
		u, err := url.Parse(adminURL)
		if err != nil {
			return "", err
		}
		u.Path = "/" + name
		u.RawPath = ""
		q := u.Query()
		q.Del("dbname")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// In a keyword/value string the last setting of a keyword wins.
	return adminURL + " dbname=" + name, nil
}

// Main runs a package's tests, then closes the pool pgtest keeps on the
// server and removes the container, if any, that pgtest started for them,
// and then fails a passing run that left goroutines behind, as
// goleak.VerifyTestMain does, with opts (goleak's options). Call it from
// TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Under Main, a test that needs a server when none can be found is skipped
// and counted, and the run then fails with one line saying how many tests
// did not run and how to provide a server, rather than every test failing
// with the same message. Main also says which server the tests used.
// Under go test -short, tests that need a server are skipped and the run
// does not fail.
//
// The leak check runs once pgtest's own pool is closed, so that its
// goroutines do not count; every pool a test opens through pgtest closes
// in that test's cleanups. A goroutine left running is a leak of the
// library under test or of the test itself (a pool, a store or a server
// it did not close): fix it rather than ignore it.
func Main(m interface{ Run() int }, opts ...goleak.Option) {
	harness.inMain.Store(true)
	code := report(m.Run())
	if shared.srv != nil {
		shared.srv.admin.Close()
		if shared.srv.purge != nil {
			shared.srv.purge()
		}
	}
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// roleURL returns dbURL with its user and password replaced.
func roleURL(dbURL, user, password string) (string, error) {
	if strings.HasPrefix(dbURL, "postgres://") || strings.HasPrefix(dbURL, "postgresql://") {
		u, err := url.Parse(dbURL)
		if err != nil {
			return "", err
		}
		u.User = url.UserPassword(user, password)
		return u.String(), nil
	}
	return dbURL + " user=" + user + " password=" + password, nil
}
