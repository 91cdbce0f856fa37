package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/internal/pgerror"
	"github.com/runlimit/runlimit/migrations"
)

const migrateSummary = `Brings Runlimit's PostgreSQL schema up to the latest version and prints the
version before and after. Running it again changes nothing; replicas may run it
at once. Every object goes into --schema, which is created when missing and
must not belong to another role.

A schema a Rust Runlimit service migrated (its _sqlx_migrations records
Runlimit's three versions) is adopted: nothing is re-created, and only the
objects this library adds are created. Let Rust services migrate a shared
database first; see the migrations package documentation.

Once connected, the migration takes at most --timeout (default 1m, at most
596h31m23.647s, the longest session timeout PostgreSQL takes): a lock
that another session holds on one of Runlimit's tables, or tern's migration
lock that another migration holds, fails it with an error naming the locks
held and by which process, and exit code 1. Nothing is applied in part: each
step is a transaction of its own.

--print-sql prints the SQL of every step in order instead, rendered for
--schema, for hosts that vendor it into their own migration history; it needs
no database.`

// latestSchema is the newest schema version this binary knows, and the
// steps that reach it, rendered for schema.
func latestSchema(schema string) (int32, []migrations.Step, error) {
	steps, err := migrations.SQL(schema)
	if err != nil {
		return 0, nil, err
	}
	return steps[len(steps)-1].Version, steps, nil
}

func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", migrateSummary, stderr)
	addDatabaseFlag(fs, true)
	schema := addSchemaFlag(fs)
	printSQL := fs.Bool("print-sql", false, "print the schema's SQL, every step in order, and exit without connecting")
	timeout := fs.Duration("timeout", defaultMigrateTimeout, "time budget of the migration once connected, lock waits included, at most "+maxMigrateTimeout.String())
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, err := schemaOf(fs, *schema, getenv)
	if err != nil {
		return err
	}
	*schema = s
	if *timeout <= 0 || *timeout > maxMigrateTimeout {
		return fmt.Errorf("%w: --timeout is %s, want more than 0 and at most %s", errUsage, *timeout, maxMigrateTimeout)
	}
	if *printSQL && isSet(fs, databaseFlagName) {
		// Ignoring the URL would let an operator believe a database was
		// migrated.
		return fmt.Errorf("%w: --print-sql connects to no database: drop --%s, or --print-sql to migrate it", errUsage, databaseFlagName)
	}
	latest, steps, err := latestSchema(*schema)
	if err != nil {
		return err
	}
	if *printSQL {
		printSchemaSQL(stdout, steps)
		return nil
	}
	db, err := connect(ctx, fs, getenv, *timeout)
	if err != nil {
		return err
	}
	defer db.close()
	// A lock held elsewhere (a LOCK TABLE on one of Runlimit's tables or
	// its version table, a long transaction, another migration's advisory
	// lock) fails the migration at the server's lock timeout, set from
	// --timeout; a server that stops answering, at the deadline.
	migrateCtx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	err = migrate(migrateCtx, db.pool, *schema, latest, steps, stdout)
	return db.wrap(db.explainTimeout(err, *schema, *timeout))
}

func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, latest int32, steps []migrations.Step, stdout io.Writer) error {
	// Nothing is read from a schema, or an object, that another role could
	// have planted: a view named like the version table would run its code
	// with the operator's rights before Migrate itself refused the schema.
	if err := migrations.CheckTrusted(ctx, pool, schema); err != nil {
		return err
	}
	before, tracked, err := schemaVersion(ctx, pool, schema)
	if err != nil {
		return err
	}
	rust, err := migrations.RustMigrated(ctx, pool, schema)
	if err != nil {
		return err
	}
	if rust {
		// Migrate adopts it: the schema is already at RustSchemaVersion.
		before = migrations.RustSchemaVersion
		fmt.Fprintf(stdout, "adopting the schema a Rust Runlimit service migrated (its _sqlx_migrations records versions %d to %d) as runlimit schema version %d\n",
			migrations.RustVersions[0], migrations.RustVersions[len(migrations.RustVersions)-1], before)
	}
	if !tracked && !rust {
		// tern would try to create tables that are already there.
		var vendored bool
		if err := pool.QueryRow(ctx, `SELECT pg_catalog.to_regclass($1::text) IS NOT NULL`,
			pgx.Identifier{schema, "runlimit_fixed_windows"}.Sanitize()).Scan(&vendored); err != nil {
			return fmt.Errorf("read the schema: %w", pgerror.Sanitize(err))
		}
		if vendored {
			return fmt.Errorf("runlimit's tables exist but its version table %s does not: the schema was vendored into the host's migrations, so apply new steps there (see --print-sql); nothing changed",
				migrations.VersionTable)
		}
	}
	if before > latest {
		return fmt.Errorf("the database's runlimit schema is at version %d, newer than this runlimit knows (%d); nothing changed", before, latest)
	}
	if err := migrations.MigratePool(ctx, pool, schema); err != nil {
		return err
	}
	after, _, err := schemaVersion(ctx, pool, schema)
	if err != nil {
		return err
	}
	if after == before {
		fmt.Fprintf(stdout, "runlimit schema already up to date at version %d\n", after)
		return nil
	}
	// Another replica migrating at the same moment may have applied some of
	// these steps itself; either way the schema went from before to after.
	var applied []string
	for _, st := range steps {
		if st.Version > before && st.Version <= after {
			applied = append(applied, st.Name)
		}
	}
	fmt.Fprintf(stdout, "runlimit schema migrated from version %d to %d (%s)\n", before, after, strings.Join(applied, ", "))
	return nil
}

// schemaVersion reads the version tern recorded in [migrations.VersionTable]
// of schema. tracked is false when there is no such table: the schema was
// never migrated, or was vendored into the host's migrations.
func schemaVersion(ctx context.Context, pool *pgxpool.Pool, schema string) (version int32, tracked bool, err error) {
	table := pgx.Identifier{schema, migrations.VersionTable}.Sanitize()
	if err := pool.QueryRow(ctx, `SELECT pg_catalog.to_regclass($1::text) IS NOT NULL`, table).Scan(&tracked); err != nil {
		return 0, false, fmt.Errorf("read the schema version: %w", pgerror.Sanitize(err))
	}
	if !tracked {
		return 0, false, nil
	}
	if err := pool.QueryRow(ctx, "SELECT version FROM "+table).Scan(&version); err != nil {
		return 0, false, fmt.Errorf("read the schema version: %w", pgerror.Sanitize(err))
	}
	return version, true, nil
}

// printSchemaSQL prints each step's up SQL under a comment naming it.
func printSchemaSQL(w io.Writer, steps []migrations.Step) {
	for i, st := range steps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "-- runlimit schema version %d: %s\n%s", st.Version, st.Name, st.Up)
		if !strings.HasSuffix(st.Up, "\n") {
			fmt.Fprintln(w)
		}
	}
}
