package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/migrations"
)

// Database is one test's own database.
type Database struct {
	// Name is the database name.
	Name string
	// URL connects to the database, for tests that open their own
	// connections or run a command against it.
	URL string
	// Pool is a small pool on the database (at most 4 connections), closed
	// before the database is dropped.
	Pool *pgxpool.Pool
	// Source says which server holds the database.
	Source Source
}

// New returns a fresh database with Runlimit's schema applied, dropped when
// the test ends.
func New(t testing.TB) *Database {
	t.Helper()
	srv := mustServer(t)
	tpl, err := srv.migratedTemplate()
	if err != nil {
		t.Fatalf("pgtest: build the migrated template database: %v", err)
	}
	return srv.newDatabase(t, tpl)
}

// NewEmpty returns a fresh database without Runlimit's schema, dropped when
// the test ends.
func NewEmpty(t testing.TB) *Database {
	t.Helper()
	return mustServer(t).newDatabase(t, "")
}

// NewPool opens another pool on d, configured by configure (which may be
// nil), and closes it when the test ends, before d is dropped. Tests use it
// for a second replica or a pool with its own session settings.
func (d *Database) NewPool(t testing.TB, configure func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(d.URL)
	if err != nil {
		t.Fatalf("pgtest: parse database URL: %v", err)
	}
	cfg.MaxConns = 4
	cfg.MinConns = 0
	if configure != nil {
		configure(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: open pool on %s: %v", d.Name, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func mustServer(t testing.TB) *server {
	t.Helper()
	skipShort(t)
	srv, err := getServer()
	if err != nil {
		noServer(t, err)
	}
	return srv
}

// newDatabase creates a database (a clone of template, or empty when template
// is "") and registers its removal.
func (s *server) newDatabase(t testing.TB, template string) *Database {
	t.Helper()
	name := "runlimit_test_" + randomSuffix()
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.admin.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	// Registered before the pool's Close, so it runs after it.
	t.Cleanup(func() {
		if err := s.dropDatabase(name); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := databaseURL(s.adminURL, name)
	if err != nil {
		t.Fatalf("pgtest: database URL: %v", err)
	}
	d := &Database{Name: name, URL: u, Source: s.source}
	d.Pool = d.NewPool(t, nil)
	return d
}

// dropDatabase drops a database with a context of its own: the test's is
// gone by the time cleanups run.
func (s *server) dropDatabase(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sql := "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize()
	if s.version >= 130000 {
		// A test that failed half-way may leave a session behind.
		sql += " WITH (FORCE)"
	}
	_, err := s.admin.Exec(ctx, sql)
	return err
}

// migratedTemplate returns a database holding the current schema, built once
// per schema version and shared by later runs: its name carries a hash of
// the migrations, and it appears under that name only once fully migrated.
func (s *server) migratedTemplate() (string, error) {
	s.templateOnce.Do(func() { s.template, s.templateErr = s.buildTemplate() })
	return s.template, s.templateErr
}

func (s *server) buildTemplate() (string, error) {
	steps, err := migrations.SQL(migrations.DefaultSchema)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, st := range steps {
		fmt.Fprintf(h, "%d\x00%s\x00%s\x00", st.Version, st.Up, st.Down)
	}
	sum := h.Sum(nil)
	name := "runlimit_tpl_" + hex.EncodeToString(sum[:8])

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := s.admin.Acquire(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Release()
	// Test binaries of several packages start at once; one builds the
	// template while the others wait for it.
	lock := int64(binary.BigEndian.Uint64(sum[8:16]))
	if _, err := conn.Exec(ctx, "SELECT pg_catalog.pg_advisory_lock($1)", lock); err != nil {
		return "", err
	}
	defer func() { _, _ = conn.Exec(context.Background(), "SELECT pg_catalog.pg_advisory_unlock($1)", lock) }()

	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_catalog.pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_" + randomSuffix()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return "", err
	}
	if err := s.migrateDatabase(ctx, building); err != nil {
		_ = s.dropDatabase(building)
		return "", err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		_ = s.dropDatabase(building)
		return "", err
	}
	return name, nil
}

func (s *server) migrateDatabase(ctx context.Context, name string) error {
	u, err := databaseURL(s.adminURL, name)
	if err != nil {
		return err
	}
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		return err
	}
	// Migrate closes its connection before returning, so the caller can
	// rename or clone the database, which PostgreSQL refuses while anyone
	// is connected.
	return migrations.Migrate(ctx, cfg, migrations.DefaultSchema)
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Role is a login role made for one test.
type Role struct {
	// Name is the role's name, unique on the server.
	Name string
	// URL connects to the test's database as the role.
	URL string
}

// NewRole creates a login role with a random password, named prefix and a
// random suffix, and removes it when the test ends: everything it owns in d
// and every privilege it holds there first, then the role. Roles belong to
// the whole server, so tests that need one of their own never share it.
func (d *Database) NewRole(t testing.TB, prefix string) *Role {
	t.Helper()
	srv := mustServer(t)
	name := prefix + "_" + randomSuffix()
	password := randomSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A password literal cannot be a bind parameter; it is hex, so quoting
	// it is safe.
	if _, err := srv.admin.Exec(ctx, "CREATE ROLE "+pgx.Identifier{name}.Sanitize()+" LOGIN PASSWORD '"+password+"'"); err != nil {
		t.Fatalf("pgtest: create role: %v", err)
	}
	// Registered after the database's cleanups, so it runs before them,
	// while d.Pool is open; pools opened as the role close before it runs.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		id := pgx.Identifier{name}.Sanitize()
		if _, err := d.Pool.Exec(ctx, "DROP OWNED BY "+id+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop what role %s owns: %v", name, err)
		}
		if _, err := srv.admin.Exec(ctx, "DROP ROLE "+id); err != nil {
			t.Errorf("pgtest: drop role %s: %v", name, err)
		}
	})
	u, err := roleURL(d.URL, name, password)
	if err != nil {
		t.Fatalf("pgtest: role URL: %v", err)
	}
	return &Role{Name: name, URL: u}
}

// NewPool opens a pool on d as the role, configured by configure (which may
// be nil), and closes it when the test ends.
func (r *Role) NewPool(t testing.TB, configure func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	return (&Database{Name: "role " + r.Name, URL: r.URL}).NewPool(t, configure)
}

// LockTable takes an ACCESS EXCLUSIVE lock on table, reached through the
// connection's search_path, in a transaction of its own: what a hostile
// session or a migration holds. It returns the function that lets the lock
// go, which the test's end calls too; calls after the first do nothing.
func (d *Database) LockTable(t testing.TB, table string) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatalf("pgtest: begin: %v", err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback(ctx) }) }
	t.Cleanup(release)
	if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{table}.Sanitize()+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatalf("pgtest: lock table %s: %v", table, err)
	}
	return release
}
