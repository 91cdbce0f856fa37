package login_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// EnvPostgresBin names a folder holding initdb and pg_ctl, for the test
// that stops a database under the service. Default: the newest
// /usr/lib/postgresql/*/bin that has them.
const EnvPostgresBin = "LOGINSERVICE_POSTGRES_BIN"

// cluster is a throwaway PostgreSQL server of one test's own, on a free
// port, which the test may stop and start again: the shared server of the
// run is never stopped.
type cluster struct {
	t    *testing.T
	bin  string // initdb and pg_ctl
	dir  string // data directory, log and socket
	port int
	// runAs is the operating-system user PostgreSQL runs as: "postgres"
	// when the tests run as root, which initdb refuses; else the test's
	// own user.
	runAs string
}

// newCluster creates and starts a cluster, removed when the test ends.
// Without initdb it skips the test, except in CI (CI set), which must run
// it.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster; skipped under -short")
	}
	bin := postgresBin()
	if bin == "" {
		msg := "no initdb and pg_ctl: install PostgreSQL's server binaries or set " + EnvPostgresBin
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir, err := os.MkdirTemp("", "loginservice-pg-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &cluster{t: t, bin: bin, dir: dir, port: freePort(t)}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		require.NoError(t, err, "running as root: initdb needs the postgres user")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(dir, uid, gid))
		c.runAs = "postgres"
	}
	// Durability is pointless for a cluster that lives for one test.
	c.run("initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "-N", "-E", "UTF8")
	c.start()
	t.Cleanup(func() {
		// Stopped already, if the test ended with it stopped.
		_ = c.command("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop").Run()
	})
	return c
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// URL connects to the cluster's postgres database.
func (c *cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// start starts the server and waits until it accepts connections.
func (c *cluster) start() {
	c.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off", c.port, c.dir)
	c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "-o", opts, "-w", "-t", "60", "start")
}

// stop stops the server, disconnecting every session, and waits until it
// is down.
func (c *cluster) stop() {
	c.t.Helper()
	c.run("pg_ctl", "-D", c.data(), "-m", "fast", "-w", "-t", "60", "stop")
}

func (c *cluster) run(name string, args ...string) {
	c.t.Helper()
	out, err := c.command(name, args...).CombinedOutput()
	require.NoError(c.t, err, "%s: %s", name, out)
}

func (c *cluster) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, name)
	if c.runAs != "" {
		return exec.Command("runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// postgresBin finds initdb and pg_ctl.
func postgresBin() string {
	candidates := []string{os.Getenv(EnvPostgresBin)}
	if os.Getenv(EnvPostgresBin) == "" {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		// Newest version last in lexical order up to 9; list newest first.
		for i := len(found) - 1; i >= 0; i-- {
			candidates = append(candidates, found[i])
		}
	}
	for _, dir := range candidates {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
				return dir
			}
		}
	}
	return ""
}

// freePort returns a loopback port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}
