package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"

	"github.com/runlimit/runlimit/internal/nilcheck"
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
// created in it, or holds an object under one of Runlimit's names that
// belongs to such a role ([CheckTrusted]).
var ErrUntrustedSchema = errors.New("runlimit: migrations: the schema or an object in it belongs to an untrusted role")

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
// database owner or a superuser, and one holding a relation or function
// under Runlimit's names that such a role does not own ([ErrUntrustedSchema],
// [CheckTrusted]), before it reads anything there. A schema a Rust
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

// sqlSchemaTrusted reports whether schema $1 exists, whether its owner is
// one the connected role can vouch for, and the first object in it, under
// one of Runlimit's names, that belongs to any other role. With $2 (a
// reader's check, [CheckOwners]) the schema's owner counts as vouched for. A trusted owner
// is the role itself or a role it is a member of (pg_has_role would say yes
// to any role for a superuser), the database's owner, pg_database_owner
// (which owns public since PostgreSQL 15) or a superuser. Runlimit's names
// are its relations and functions (runlimit_*) and sqlx's
// _sqlx_migrations, which Migrate reads to adopt a Rust schema. A trigger
// on one of Runlimit's relations counts as an object of that relation
// owned by its function's owner, and a foreign key into one as an object
// owned by the referencing table's owner: a role holding TRIGGER or
// REFERENCES there could otherwise run its code with the rights of every
// role that writes the table, or keep counters from being deleted. A
// trigger that calls one of the schema's runlimit_ functions is refused
// whoever owns it (misattached) when Runlimit's triggers never attach a
// function so: with a transition table on anything but one
// statement-level AFTER INSERT (new rows) or AFTER DELETE (old rows), on
// an event another trigger of that function on the table already has, or
// on a row event when a trigger of the function is on TRUNCATE (or the
// reverse). The ledger's functions run as their owner, and PUBLIC may
// execute them before step 7 (and any role granted it after): attached to UPDATE, a second DELETE, or INSERT (the truncate
// reset), they would make the ledger miscount and the bound per shard
// fail. Every operator and function is one of pg_catalog's for exactly its argument
// types, so the query means the same on a connection whose search_path a
// hostile role reaches.
const sqlSchemaTrusted = `WITH RECURSIVE mine(role) AS (
    SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER
  UNION
    SELECT m.roleid FROM pg_catalog.pg_auth_members AS m JOIN mine ON m.member OPERATOR(pg_catalog.=) mine.role),
trusted(role) AS (
    SELECT role FROM mine
  UNION
    SELECT d.datdba FROM pg_catalog.pg_database AS d
    WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()
  UNION
    SELECT r.oid FROM pg_catalog.pg_roles AS r
    WHERE r.rolsuper OR r.rolname OPERATOR(pg_catalog.=) 'pg_database_owner'::pg_catalog.name),
objects(namespace, name, kind, label, owner, misattached) AS (
    SELECT c.relnamespace, c.relname::pg_catalog.text, ''::pg_catalog.text, ''::pg_catalog.text, c.relowner, false
    FROM pg_catalog.pg_class AS c
  UNION ALL
    SELECT p.pronamespace, p.proname::pg_catalog.text, ''::pg_catalog.text, ''::pg_catalog.text, p.proowner, false
    FROM pg_catalog.pg_proc AS p
  UNION ALL
    SELECT c.relnamespace, c.relname::pg_catalog.text, 'trigger'::pg_catalog.text, t.tgname::pg_catalog.text, p.proowner,
        p.pronamespace OPERATOR(pg_catalog.=) c.relnamespace
        AND pg_catalog.starts_with(p.proname::pg_catalog.text, 'runlimit_'::pg_catalog.text)
        AND (
          -- a transition table on anything but one statement-level AFTER
          -- INSERT (new rows) or AFTER DELETE (old rows)
          ((t.tgoldtable IS NOT NULL OR t.tgnewtable IS NOT NULL)
           AND NOT ((t.tgtype OPERATOR(pg_catalog.=) 4::pg_catalog.int2 AND t.tgoldtable IS NULL)
                 OR (t.tgtype OPERATOR(pg_catalog.=) 8::pg_catalog.int2 AND t.tgnewtable IS NULL)))
          -- a function on TRUNCATE and on a row event at once
          OR (t.tgtype OPERATOR(pg_catalog.&) 32::pg_catalog.int2 OPERATOR(pg_catalog.<>) 0::pg_catalog.int2
              AND t.tgtype OPERATOR(pg_catalog.&) 28::pg_catalog.int2 OPERATOR(pg_catalog.<>) 0::pg_catalog.int2)
          OR EXISTS (
            SELECT FROM pg_catalog.pg_trigger AS u
            WHERE u.tgrelid OPERATOR(pg_catalog.=) t.tgrelid AND NOT u.tgisinternal
              AND u.tgfoid OPERATOR(pg_catalog.=) t.tgfoid AND u.oid OPERATOR(pg_catalog.<>) t.oid
              AND (
                -- a second trigger of the function on one of its events
                (u.oid OPERATOR(pg_catalog.<) t.oid
                 AND u.tgtype OPERATOR(pg_catalog.&) t.tgtype OPERATOR(pg_catalog.&) 60::pg_catalog.int2
                     OPERATOR(pg_catalog.<>) 0::pg_catalog.int2)
                -- the function of a TRUNCATE trigger on a row event
                OR (u.tgtype OPERATOR(pg_catalog.&) 32::pg_catalog.int2 OPERATOR(pg_catalog.<>) 0::pg_catalog.int2
                    AND t.tgtype OPERATOR(pg_catalog.&) 28::pg_catalog.int2 OPERATOR(pg_catalog.<>) 0::pg_catalog.int2)
                OR (t.tgtype OPERATOR(pg_catalog.&) 32::pg_catalog.int2 OPERATOR(pg_catalog.<>) 0::pg_catalog.int2
                    AND u.tgtype OPERATOR(pg_catalog.&) 28::pg_catalog.int2 OPERATOR(pg_catalog.<>) 0::pg_catalog.int2
                    AND u.oid OPERATOR(pg_catalog.<) t.oid))))
    FROM pg_catalog.pg_trigger AS t
    JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) t.tgrelid
    JOIN pg_catalog.pg_proc AS p ON p.oid OPERATOR(pg_catalog.=) t.tgfoid
    WHERE NOT t.tgisinternal
  UNION ALL
    SELECT c.relnamespace, c.relname::pg_catalog.text, 'foreign key'::pg_catalog.text, k.conname::pg_catalog.text, r.relowner, false
    FROM pg_catalog.pg_constraint AS k
    JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) k.confrelid
    JOIN pg_catalog.pg_class AS r ON r.oid OPERATOR(pg_catalog.=) k.conrelid
    WHERE k.contype OPERATOR(pg_catalog.=) 'f'::pg_catalog."char")
SELECT $2::pg_catalog.bool OR n.nspowner IN (SELECT role FROM trusted), planted.name, planted.kind, planted.label, planted.misattached
FROM pg_catalog.pg_namespace AS n
LEFT JOIN LATERAL (
    SELECT o.name, o.kind, o.label, o.misattached FROM objects AS o
    WHERE o.namespace OPERATOR(pg_catalog.=) n.oid
      AND (pg_catalog.starts_with(o.name, 'runlimit_'::pg_catalog.text)
           OR o.name OPERATOR(pg_catalog.=) '_sqlx_migrations'::pg_catalog.text)
      AND (o.misattached
           OR (o.owner NOT IN (SELECT role FROM trusted)
               AND NOT ($2::pg_catalog.bool AND o.owner OPERATOR(pg_catalog.=) n.nspowner)))
    ORDER BY o.name, o.kind, o.label
    LIMIT 1) AS planted ON true
WHERE n.nspname OPERATOR(pg_catalog.=) $1::pg_catalog.text::pg_catalog.name`

// ensureSchema creates schema when it does not exist and checks who owns it
// and what is in it.
func ensureSchema(ctx context.Context, conn *pgx.Conn, schema string) error {
	err := checkTrusted(ctx, conn, schema)
	if errors.Is(err, errNoSchema) {
		// Another replica may be creating it at this moment: IF NOT EXISTS
		// covers one that committed first, and a unique violation on the
		// catalog one that committed while this one ran. Either way the
		// schema now exists, and whose it is is checked below.
		if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil && !isUniqueViolation(err) {
			return fmt.Errorf("runlimit: migrations: create schema %s: %w", pgx.Identifier{schema}.Sanitize(), pgerror.Sanitize(err))
		}
		err = checkTrusted(ctx, conn, schema)
	}
	return err
}

// isUniqueViolation reports whether err is the server's unique_violation,
// which two sessions creating one schema at once can meet on the catalog.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// errNoSchema is matched by the error of [CheckTrusted] for a schema that
// does not exist.
var errNoSchema = errors.New("runlimit: migrations: the schema does not exist")

// CheckTrusted returns an error matching [ErrUntrustedSchema] when schema
// ("" means [DefaultSchema]) belongs to a role that the role q connects as
// cannot vouch for (see [Migrate]), or holds a table, view, sequence or
// function under one of Runlimit's names (runlimit_*, or _sqlx_migrations)
// that belongs to such a role: reading or writing it, or replacing it,
// would run that role's code with the connected role's rights or leave the
// object in its hands. It also refuses a trigger on one of Runlimit's
// tables whose function such a role owns, a foreign key into one from
// such a role's table, and a trigger that attaches one of Runlimit's own
// trigger functions in a way Runlimit's triggers never do (a role holding
// TRIGGER could make the capacity ledger miscount with them). Run it before reading anything from a schema an
// operator named. A schema that does not exist is not an error: [Migrate]
// creates it. Its query reaches every name through pg_catalog, whatever
// q's search_path.
func CheckTrusted(ctx context.Context, q Querier, schema string) error {
	return checkExisting(ctx, q, schema, false)
}

// CheckOwners is the check of a role that uses a schema another role
// migrated, such as a service's role holding only the privileges it needs,
// or the runlimit status and cleanup commands run as that role: it
// returns an error matching [ErrUntrustedSchema] when schema ("" means
// [DefaultSchema]) holds a table, view, sequence or function under one of
// Runlimit's names (runlimit_*, or _sqlx_migrations) that belongs neither
// to the schema's owner nor to a role q's role can vouch for (see
// [Migrate]). Such an object was planted by a role holding CREATE on the
// schema: reading it, or calling it, would run that role's code with q's
// role's rights, and an object missing from the schema (a version table a
// vendored schema lacks, sqlx's table a Go-migrated one lacks) is just the
// name such a role would choose. Triggers and foreign keys on Runlimit's
// tables are checked as [CheckTrusted] checks them, the schema's owner
// vouched for. Unlike [CheckTrusted], it accepts a
// schema owned by any role: whoever names a schema trusts its owner, who
// can replace anything in it. A schema that does not exist is not an
// error. Its query reaches every name through pg_catalog, whatever q's
// search_path; its errors name the object and the schema, nothing else.
func CheckOwners(ctx context.Context, q Querier, schema string) error {
	return checkExisting(ctx, q, schema, true)
}

// checkExisting validates the arguments of CheckTrusted (reader false) and
// CheckOwners (reader true) and runs their check; a missing schema is not
// an error.
func checkExisting(ctx context.Context, q Querier, schema string, reader bool) error {
	schema, err := resolve(schema)
	if err != nil {
		return err
	}
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: context", ErrNilArgument)
	case nilcheck.IsNil(q):
		return fmt.Errorf("%w: querier", ErrNilArgument)
	}
	if err := checkSchema(ctx, q, schema, reader); err != nil && !errors.Is(err, errNoSchema) {
		return err
	}
	return nil
}

// checkTrusted is [CheckTrusted] reporting a missing schema as errNoSchema.
func checkTrusted(ctx context.Context, q Querier, schema string) error {
	return checkSchema(ctx, q, schema, false)
}

// checkSchema runs [CheckTrusted]'s check, or [CheckOwners]' when reader
// is set, reporting a missing schema as errNoSchema.
func checkSchema(ctx context.Context, q Querier, schema string, reader bool) error {
	var trusted bool
	var object, kind, label *string
	var misattached *bool
	err := q.QueryRow(ctx, sqlSchemaTrusted, schema, reader).Scan(&trusted, &object, &kind, &label, &misattached)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return errNoSchema
	case err != nil:
		return fmt.Errorf("runlimit: migrations: read schema %s: %w", pgx.Identifier{schema}.Sanitize(), pgerror.Sanitize(err))
	case !trusted:
		return fmt.Errorf("%w: schema %s; make the migrating role its owner, or choose another schema",
			ErrUntrustedSchema, pgx.Identifier{schema}.Sanitize())
	case object != nil && *misattached:
		return fmt.Errorf("%w: %s %s on %s in schema %s calls one of Runlimit's trigger functions on an event Runlimit's own triggers do not, and could make the capacity ledger miscount; drop it, and take TRIGGER on Runlimit's tables from every role but their owner",
			ErrUntrustedSchema, *kind, plantedName(*label), plantedName(*object), pgx.Identifier{schema}.Sanitize())
	case object != nil && *kind == "foreign key":
		return fmt.Errorf("%w: %s %s on %s in schema %s belongs to a table of an untrusted role, which could keep counters from being deleted; drop it, and take REFERENCES on Runlimit's tables from every role but their owner",
			ErrUntrustedSchema, *kind, plantedName(*label), plantedName(*object), pgx.Identifier{schema}.Sanitize())
	case object != nil && *kind != "":
		return fmt.Errorf("%w: %s %s on %s in schema %s calls a function of an untrusted role, which would run with the rights of every role that writes the table; drop it, and take TRIGGER on Runlimit's tables from every role but their owner",
			ErrUntrustedSchema, *kind, plantedName(*label), plantedName(*object), pgx.Identifier{schema}.Sanitize())
	case object != nil && reader:
		return fmt.Errorf("%w: %s in schema %s belongs to a role that neither owns the schema nor is trusted by the connected role, and could run its code with the connected role's rights; drop it, or make the schema's owner its owner",
			ErrUntrustedSchema, plantedName(*object), pgx.Identifier{schema}.Sanitize())
	case object != nil:
		return fmt.Errorf("%w: %s in schema %s belongs to another role, which could run its code with the migrating role's rights; drop it, or make a trusted role its owner",
			ErrUntrustedSchema, plantedName(*object), pgx.Identifier{schema}.Sanitize())
	}
	return nil
}

// plantedName quotes the name of an object another role planted, for an
// error. That role chose it, and a quoted identifier may hold any
// character but NUL: a terminal's escape sequences, or a newline and a
// forged log record. A name of printable ASCII is quoted as SQL quotes
// it; any other is escaped as Go's %+q spells it, so that the error shows
// what is there without a terminal or a log reading it.
func plantedName(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return strconv.QuoteToASCII(name)
		}
	}
	return pgx.Identifier{name}.Sanitize()
}
