package migrations

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/runlimit/runlimit/internal/nilcheck"
	"github.com/runlimit/runlimit/internal/pgerror"
)

// RustVersions are the versions a Rust Runlimit service records in sqlx's
// _sqlx_migrations table once it has created Runlimit's schema: the counter
// table, its fillfactor, and the capacity ledger. A schema whose
// _sqlx_migrations holds all three, each applied successfully, equals this
// package's schema at version [RustSchemaVersion].
var RustVersions = [...]int64{20260723000000, 20260725000000, 20260726000000}

// RustSchemaVersion is the version [Migrate] records for a schema a Rust
// Runlimit service migrated, before it applies the steps after it: the
// objects this library adds (the lock function, the truncate trigger).
const RustSchemaVersion = 5

// ErrRustIncomplete: the schema's _sqlx_migrations holds some of
// [RustVersions] but not all, or not all applied successfully, or
// Runlimit's table is missing: a Rust service's migration did not finish.
var ErrRustIncomplete = errors.New("runlimit: migrations: a Rust Runlimit service migrated the schema only in part")

// Querier runs one query returning a row: a *pgx.Conn, a pgx.Tx or a
// *pgxpool.Pool.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// sqlRustMigrated reads, for the schema's qualified names $1 (the version
// table), $2 (_sqlx_migrations) and $3 (the counter table), whether this
// package tracks the schema, whether sqlx's table exists, how many of
// RustVersions ($4) it records as applied, and whether Runlimit's table
// exists. The count is read only when sqlx's table exists.
const sqlRustMigrated = `SELECT pg_catalog.to_regclass($1::pg_catalog.text) IS NOT NULL,
       pg_catalog.to_regclass($2::pg_catalog.text) IS NOT NULL,
       pg_catalog.to_regclass($3::pg_catalog.text) IS NOT NULL`

// sqlRustApplied counts, in sqlx's table (%s, qualified and quoted), the
// rows of RustVersions ($1); with $2, only those applied successfully.
// Like every query of this package's on a querier of the caller's, it
// names every function and operator in full: the caller's search_path may
// reach a schema before pg_catalog.
const sqlRustApplied = `SELECT pg_catalog.count(*) FROM %s AS m
WHERE m.version OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.int8[])
  AND (m.success OR NOT $2::pg_catalog.bool)`

// RustMigrated reports whether schema ("" means [DefaultSchema]) holds
// Runlimit's schema as a Rust Runlimit service migrated it, not yet
// adopted by [Migrate]: its _sqlx_migrations records every one of
// [RustVersions] as applied, and this package's version table does not
// exist. A _sqlx_migrations without any of them belongs to the host
// alone, and is not Runlimit's. A partial record is [ErrRustIncomplete].
// A nil ctx or q (a nil pointer in the interface included) is an error
// matching [ErrNilArgument].
func RustMigrated(ctx context.Context, q Querier, schema string) (bool, error) {
	schema, err := resolve(schema)
	if err != nil {
		return false, err
	}
	switch {
	case ctx == nil:
		return false, fmt.Errorf("%w: context", ErrNilArgument)
	case nilcheck.IsNil(q):
		return false, fmt.Errorf("%w: querier", ErrNilArgument)
	}
	var tracked, sqlx, table bool
	err = q.QueryRow(ctx, sqlRustMigrated, pgx.Identifier{schema, VersionTable}.Sanitize(),
		pgx.Identifier{schema, "_sqlx_migrations"}.Sanitize(),
		pgx.Identifier{schema, "runlimit_fixed_windows"}.Sanitize()).Scan(&tracked, &sqlx, &table)
	if err != nil {
		return false, fmt.Errorf("runlimit: migrations: read the schema: %w", pgerror.Sanitize(err))
	}
	if tracked || !sqlx {
		return false, nil
	}
	applied, sqlxTable := 0, pgx.Identifier{schema, "_sqlx_migrations"}.Sanitize()
	err = q.QueryRow(ctx, fmt.Sprintf(sqlRustApplied, sqlxTable), RustVersions[:], true).Scan(&applied)
	if err != nil {
		return false, fmt.Errorf("runlimit: migrations: read _sqlx_migrations: %w", pgerror.Sanitize(err))
	}
	switch {
	case applied == 0:
		var recorded int
		err = q.QueryRow(ctx, fmt.Sprintf(sqlRustApplied, sqlxTable), RustVersions[:], false).Scan(&recorded)
		if err != nil {
			return false, fmt.Errorf("runlimit: migrations: read _sqlx_migrations: %w", pgerror.Sanitize(err))
		}
		if recorded > 0 {
			return false, fmt.Errorf("%w: none of its steps is recorded as successful", ErrRustIncomplete)
		}
		return false, nil
	case applied < len(RustVersions):
		return false, fmt.Errorf("%w: %d of its %d steps are recorded; let a Rust service finish migrating first",
			ErrRustIncomplete, applied, len(RustVersions))
	case !table:
		return false, fmt.Errorf("%w: _sqlx_migrations records its steps but runlimit_fixed_windows does not exist", ErrRustIncomplete)
	}
	return true, nil
}

// adopt takes over a schema a Rust Runlimit service migrated: it creates
// the version table at [RustSchemaVersion], re-creating nothing, so that
// the migrator applies only the steps after it. Replicas adopting at once
// queue on the counter table's lock, and the second finds the schema
// adopted. It reports whether it adopted the schema.
func adopt(ctx context.Context, conn *pgx.Conn, schema string) (bool, error) {
	if rust, err := RustMigrated(ctx, conn, schema); err != nil || !rust {
		return false, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("runlimit: migrations: adopt: %w", pgerror.Sanitize(err))
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// SHARE ROW EXCLUSIVE conflicts with itself, not with readers.
	if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{schema, "runlimit_fixed_windows"}.Sanitize()+
		" IN SHARE ROW EXCLUSIVE MODE"); err != nil {
		return false, fmt.Errorf("runlimit: migrations: adopt: %w", pgerror.Sanitize(err))
	}
	rust, err := RustMigrated(ctx, tx, schema)
	if err != nil || !rust {
		return false, err
	}
	versionTable := pgx.Identifier{schema, VersionTable}.Sanitize()
	// The table tern would create, at the version the Rust schema equals.
	if _, err := tx.Exec(ctx, "CREATE TABLE "+versionTable+" (version int4 NOT NULL)"); err != nil {
		return false, fmt.Errorf("runlimit: migrations: adopt: %w", pgerror.Sanitize(err))
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+versionTable+" (version) VALUES ($1)", RustSchemaVersion); err != nil {
		return false, fmt.Errorf("runlimit: migrations: adopt: %w", pgerror.Sanitize(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("runlimit: migrations: adopt: %w", pgerror.Sanitize(err))
	}
	return true, nil
}
