package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
)

// VersionTable is the table in which tern records Runlimit's schema version.
// It is Runlimit's own, so it never collides with a host's tern history.
const VersionTable = "runlimit_schema_version"

//go:embed *.sql
var files embed.FS

// Step is one migration of the schema: the SQL that applies it and the SQL
// that reverts it, as tern runs them.
type Step struct {
	// Version is the schema version once the step is applied, from 1.
	Version int32
	// Name is the step's file name, such as "001_fixed_windows.sql".
	Name string
	// Up applies the step.
	Up string
	// Down reverts the step.
	Down string
}

// FS returns the embedded migration files, named as tern expects
// ("001_name.sql", with tern's up/down separator line).
func FS() fs.FS { return files }

// SQL returns every step in the order [Migrate] applies them, for hosts that
// vendor the schema into their own migration history.
func SQL() ([]Step, error) {
	m, err := migrate.NewMigratorEx(context.Background(), nil, VersionTable, &migrate.MigratorOptions{})
	if err != nil {
		return nil, fmt.Errorf("runlimit: migrations: %w", err)
	}
	if err := m.LoadMigrations(files); err != nil {
		return nil, fmt.Errorf("runlimit: migrations: load: %w", err)
	}
	steps := make([]Step, len(m.Migrations))
	for i, mg := range m.Migrations {
		steps[i] = Step{Version: mg.Sequence, Name: mg.Name, Up: mg.UpSQL, Down: mg.DownSQL}
	}
	return steps, nil
}

// Migrate brings the schema on conn up to the latest version. Applying it
// again is a no-op. Each step runs in its own transaction.
func Migrate(ctx context.Context, conn *pgx.Conn) error {
	m, err := migrate.NewMigratorEx(ctx, conn, VersionTable, &migrate.MigratorOptions{})
	if err != nil {
		return fmt.Errorf("runlimit: migrations: prepare %s: %w", VersionTable, err)
	}
	if err := m.LoadMigrations(files); err != nil {
		return fmt.Errorf("runlimit: migrations: load: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("runlimit: migrations: migrate: %w", err)
	}
	return nil
}

// MigratePool runs [Migrate] on a connection acquired from pool. The pool
// stays open.
func MigratePool(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("runlimit: migrations: acquire a connection: %w", err)
	}
	if err := Migrate(ctx, conn.Conn()); err != nil {
		// tern holds a session-level advisory lock while it migrates; after a
		// failure (a cancelled context above all) the connection may still
		// hold it, and pooled, would stall every later migrator. Close it.
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Hijack().Close(closeCtx)
		return err
	}
	conn.Release()
	return nil
}
