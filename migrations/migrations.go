package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"

	"github.com/runlimit/runlimit/internal/pgerror"
)

// VersionTable is the table, in the schema the migrations are applied to, in
// which tern records Runlimit's schema version. It is Runlimit's own, so it
// never collides with a host's tern history.
const VersionTable = "runlimit_schema_version"

// pinnedSearchPath is the search_path of the connection Migrate runs on. It
// is a startup parameter, so that tern's RESET ALL between steps returns to
// it, and it names no schema a role could create objects in.
const pinnedSearchPath = "pg_catalog, pg_temp"

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
// ("001_name.sql", with tern's up/down separator line). They are templates:
// tern renders {{.schema}} from the migrator's Data["schema"], which must be
// the quoted schema name (pgx.Identifier{schema}.Sanitize()).
func FS() fs.FS { return files }

// ErrUntrustedSchema: the schema to migrate exists but belongs to a role the
// migrating role cannot vouch for, which could drop or replace anything
// created in it.
var ErrUntrustedSchema = errors.New("runlimit: migrations: the schema belongs to an untrusted role")

// ErrNilArgument is matched by the error of [Migrate], [MigratePool] and
// [RustMigrated] called with a nil context, connection config, pool or
// querier: a caller's mistake, reported before any connection is made.
var ErrNilArgument = errors.New("runlimit: migrations: nil argument")

// SQL returns every step in the order [Migrate] applies them, rendered for
// schema ("" means [DefaultSchema]), for hosts that vendor the schema into
// their own migration history. The steps expect schema to exist.
func SQL(schema string) ([]Step, error) {
	schema, err := resolve(schema)
	if err != nil {
		return nil, err
	}
	m, err := migrate.NewMigratorEx(context.Background(), nil, VersionTable, &migrate.MigratorOptions{})
	if err != nil {
		return nil, fmt.Errorf("runlimit: migrations: %w", pgerror.Sanitize(err))
	}
	if err := load(m, schema); err != nil {
		return nil, err
	}
	steps := make([]Step, len(m.Migrations))
	for i, mg := range m.Migrations {
		steps[i] = Step{Version: mg.Sequence, Name: mg.Name, Up: mg.UpSQL, Down: mg.DownSQL}
	}
	return steps, nil
}

// load renders the embedded steps for schema into m.
func load(m *migrate.Migrator, schema string) error {
	m.Data["schema"] = pgx.Identifier{schema}.Sanitize()
	if err := m.LoadMigrations(files); err != nil {
		return fmt.Errorf("runlimit: migrations: load: %w", pgerror.Sanitize(err))
	}
	return nil
}

// Migrate brings Runlimit's schema in schema ("" means [DefaultSchema]) up
// to the latest version, on the database config connects to. Applying it
// again is a no-op. Each step runs in its own transaction.
//
// Migrate opens a connection of its own from config, with search_path
// pinned to pg_catalog and pg_temp as a startup parameter: tern resets the
// session between steps, and a search_path that reached a schema some other
// role can create (the default "$user" one above all) would let that role's
// functions stand in for the ones tern calls, running with the migrating
// role's rights. It creates schema when it does not exist, and refuses one
// owned by any role but the migrating role, a role it is a member of, the
// database owner or a superuser ([ErrUntrustedSchema]). A schema a Rust
// Runlimit service migrated ([RustMigrated]) is adopted: Migrate records it
// at [RustSchemaVersion], re-creating nothing, and applies the later steps.
// Its errors never hold the password or the connection config. A nil ctx
// or config is an error matching [ErrNilArgument].
func Migrate(ctx context.Context, config *pgx.ConnConfig, schema string) error {
	schema, err := resolve(schema)
	if err != nil {
		return err
	}
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: context", ErrNilArgument)
	case config == nil:
		return fmt.Errorf("%w: connection config", ErrNilArgument)
	}
	config = config.Copy()
	config.RuntimeParams["search_path"] = pinnedSearchPath
	conn, err := pgx.ConnectConfig(ctx, config)
	if err != nil {
		return fmt.Errorf("runlimit: migrations: connect: %w", pgerror.Sanitize(err))
	}
	// tern holds a session-level advisory lock while it migrates; closing
	// the connection releases it, whatever happened.
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if err := ensureSchema(ctx, conn, schema); err != nil {
		return err
	}
	if _, err := adopt(ctx, conn, schema); err != nil {
		return err
	}
	versionTable := pgx.Identifier{schema, VersionTable}.Sanitize()
	m, err := migrate.NewMigratorEx(ctx, conn, versionTable, &migrate.MigratorOptions{})
	if err != nil {
		return fmt.Errorf("runlimit: migrations: prepare %s: %w", versionTable, pgerror.Sanitize(err))
	}
	if err := load(m, schema); err != nil {
		return err
	}
	if err := m.Migrate(ctx); err != nil {
		var stepErr migrate.MigrationPgError
		if errors.As(err, &stepErr) {
			// The step's name, not its SQL: the server's error says where.
			return fmt.Errorf("runlimit: migrations: step %s: %w", stepErr.MigrationName, pgerror.Sanitize(stepErr.PgError))
		}
		return fmt.Errorf("runlimit: migrations: migrate: %w", pgerror.Sanitize(err))
	}
	return nil
}

// MigratePool runs [Migrate] with the configuration of pool's connections.
// The pool stays open and untouched. A nil pool is an error matching
// [ErrNilArgument].
func MigratePool(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if pool == nil {
		if _, err := resolve(schema); err != nil {
			return err
		}
		return fmt.Errorf("%w: pool", ErrNilArgument)
	}
	return Migrate(ctx, pool.Config().ConnConfig, schema)
}

// sqlSchemaTrusted reports whether schema $1 exists and whether its owner is
// one the migrating role can vouch for: itself or a role it is a member of
// (pg_has_role would say yes to any role for a superuser), the database's
// owner, pg_database_owner (which owns public since PostgreSQL 15) or a
// superuser.
const sqlSchemaTrusted = `WITH RECURSIVE mine(role) AS (
    SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = CURRENT_USER
  UNION
    SELECT m.roleid FROM pg_catalog.pg_auth_members AS m JOIN mine ON m.member = mine.role)
SELECT n.nspowner IN (SELECT role FROM mine)
    OR n.nspowner = (SELECT d.datdba FROM pg_catalog.pg_database AS d
                     WHERE d.datname = pg_catalog.current_database())
    OR n.nspowner IS NOT DISTINCT FROM pg_catalog.to_regrole('pg_database_owner')::pg_catalog.oid
    OR COALESCE((SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.oid = n.nspowner), false)
FROM pg_catalog.pg_namespace AS n
WHERE n.nspname = $1`

// ensureSchema creates schema when it does not exist and checks who owns it.
func ensureSchema(ctx context.Context, conn *pgx.Conn, schema string) error {
	trusted, err := schemaTrusted(ctx, conn, schema)
	if errors.Is(err, pgx.ErrNoRows) {
		// IF NOT EXISTS: another replica may be creating it at this moment.
		if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("runlimit: migrations: create schema %s: %w", pgx.Identifier{schema}.Sanitize(), pgerror.Sanitize(err))
		}
		trusted, err = schemaTrusted(ctx, conn, schema)
	}
	if err != nil {
		return fmt.Errorf("runlimit: migrations: read schema %s: %w", pgx.Identifier{schema}.Sanitize(), pgerror.Sanitize(err))
	}
	if !trusted {
		return fmt.Errorf("%w: schema %s; make the migrating role its owner, or choose another schema",
			ErrUntrustedSchema, pgx.Identifier{schema}.Sanitize())
	}
	return nil
}

func schemaTrusted(ctx context.Context, conn *pgx.Conn, schema string) (bool, error) {
	var trusted bool
	err := conn.QueryRow(ctx, sqlSchemaTrusted, schema).Scan(&trusted)
	return trusted, err
}
