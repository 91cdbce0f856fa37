package pgtest

import (
	"context"
	"crypto/sha512"
	"embed"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runlimit/runlimit/migrations"
)

// rustSchema holds Runlimit's schema as a Rust Runlimit service's sqlx
// migrations leave it, one file per version, written from the facts of
// SPEC section 5 ("Schema names"): the same names, SQLSTATEs and behaviour,
// in SQL of its own.
//
//go:embed rustschema/*.sql
var rustSchema embed.FS

// sqlSQLXTable is sqlx's migration history table.
const sqlSQLXTable = `CREATE TABLE IF NOT EXISTS _sqlx_migrations (
    version bigint PRIMARY KEY,
    description text NOT NULL,
    installed_on timestamptz NOT NULL DEFAULT now(),
    success boolean NOT NULL,
    checksum bytea NOT NULL,
    execution_time bigint NOT NULL
)`

// MigrateAsRust gives d Runlimit's schema in schema (created when missing)
// as a Rust Runlimit service leaves it: each of its three migrations run
// with search_path set to schema, in a transaction of its own, and recorded
// as applied in that schema's _sqlx_migrations, as sqlx records them (the
// checksum is SHA-384 of the step's SQL). The version numbers are
// [migrations.RustVersions].
func (d *Database) MigrateAsRust(t testing.TB, schema string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := d.Pool.Acquire(ctx)
	if err != nil {
		t.Fatalf("pgtest: acquire: %v", err)
	}
	// The connection's search_path changes: it is not pooled again.
	defer func() { _ = conn.Hijack().Close(context.Background()) }()
	s := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+s+"; SET search_path = "+s); err != nil {
		t.Fatalf("pgtest: schema %s: %v", schema, err)
	}
	if _, err := conn.Exec(ctx, sqlSQLXTable); err != nil {
		t.Fatalf("pgtest: _sqlx_migrations: %v", err)
	}
	files, err := fs.Glob(rustSchema, "rustschema/*.sql")
	if err != nil || len(files) != len(migrations.RustVersions) {
		t.Fatalf("pgtest: want %d Rust migrations, have %v (%v)", len(migrations.RustVersions), files, err)
	}
	for i, name := range files {
		base := strings.TrimPrefix(name, "rustschema/")
		prefix, description, _ := strings.Cut(strings.TrimSuffix(base, ".sql"), "_")
		version, err := strconv.ParseInt(prefix, 10, 64)
		if err != nil || version != migrations.RustVersions[i] {
			t.Fatalf("pgtest: %s is not Rust version %d", name, migrations.RustVersions[i])
		}
		sql, err := rustSchema.ReadFile(name)
		if err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		sum := sha512.Sum384(sql)
		began := time.Now()
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
				VALUES ($1, $2, true, $3, $4)`, version, strings.ReplaceAll(description, "_", " "), sum[:], time.Since(began).Nanoseconds())
			return err
		})
		if err != nil {
			t.Fatalf("pgtest: Rust migration %s: %v", base, err)
		}
	}
}
