package migrations_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
)

// populate inserts n counters into schema's table through whatever
// triggers it has: first bytes spread over every shard, a third of them
// expired. It returns the ledger's counts by shard.
func populate(t *testing.T, conn *pgx.Conn, schema string, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	_, err := conn.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "runlimit_fixed_windows"}.Sanitize()+`
		(policy_id, scope_id, config_fingerprint, subject_key, window_started_at, window_expires_at, used)
		SELECT 'p' || (i % 3), 's',
		       decode(lpad(to_hex(i % 256), 2, '0'), 'hex') || substr(sha256(int4send(i)), 2),
		       decode(lpad(to_hex((i / 256) % 256), 2, '0'), 'hex') || substr(sha256(int4send(-i)), 2),
		       now() + ((i % 3) * 90 - 120) * interval '1 minute', now() + ((i % 3) * 90 - 60) * interval '1 minute',
		       1 + i % 7
		FROM generate_series(1, $1) AS i`, n)
	require.NoError(t, err)
	return ledgerCounts(t, conn, schema)
}

// ledgerCounts returns the ledger's count of each shard, and checks that
// each matches the table.
func ledgerCounts(t *testing.T, conn *pgx.Conn, schema string) []int64 {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT c.row_count,
			(SELECT count(*) FROM `+pgx.Identifier{schema, "runlimit_fixed_windows"}.Sanitize()+` AS w
			 WHERE (get_byte(w.config_fingerprint, 0) # get_byte(w.subject_key, 0)) = c.capacity_shard)
		FROM `+pgx.Identifier{schema, "runlimit_capacity_shards"}.Sanitize()+` AS c ORDER BY c.capacity_shard`)
	require.NoError(t, err)
	var counts []int64
	for rows.Next() {
		var ledger, actual int64
		require.NoError(t, rows.Scan(&ledger, &actual))
		require.Equal(t, actual, ledger, "shard %d: the ledger disagrees with the table", len(counts))
		counts = append(counts, ledger)
	}
	require.NoError(t, rows.Err())
	require.Len(t, counts, 256)
	return counts
}

// contents digests every counter row of schema's table, in key order.
func contents(t *testing.T, conn *pgx.Conn, schema string) (rows int, digest string) {
	t.Helper()
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT count(*), md5(string_agg(
			policy_id || '|' || scope_id || '|' || encode(config_fingerprint, 'hex') || '|' || encode(subject_key, 'hex')
			|| '|' || window_started_at::text || '|' || window_expires_at::text || '|' || used::text, ','
			ORDER BY config_fingerprint, subject_key))
		FROM `+pgx.Identifier{schema, "runlimit_fixed_windows"}.Sanitize()).Scan(&rows, &digest))
	return rows, digest
}

// sqlxHistory returns the rows of schema's _sqlx_migrations as text.
func sqlxHistory(t *testing.T, conn *pgx.Conn, schema string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT m::text FROM `+pgx.Identifier{schema, "_sqlx_migrations"}.Sanitize()+
		` AS m ORDER BY version`)
	require.NoError(t, err)
	history, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return history
}

func relationIDs(t *testing.T, conn *pgx.Conn, schema string) []uint32 {
	t.Helper()
	var ids []uint32
	for _, table := range []string{"runlimit_fixed_windows", "runlimit_capacity_shards", "runlimit_fixed_windows_expiry_idx"} {
		var id uint32
		require.NoError(t, conn.QueryRow(context.Background(), "SELECT $1::regclass::oid",
			pgx.Identifier{schema, table}.Sanitize()).Scan(&id))
		ids = append(ids, id)
	}
	return ids
}

// A schema a Rust Runlimit service migrated, full of counters, is adopted:
// nothing is re-created or changed, not a row, not a count, not sqlx's
// history; this library adds only its own objects and records its version.
// Migrating again changes nothing.
func TestMigrateAdoptsARustSchema(t *testing.T) {
	t.Parallel()
	for _, schemaName := range []string{"public", "limits"} {
		t.Run(schemaName, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := pgtest.NewEmpty(t)
			db.MigrateAsRust(t, schemaName)
			conn := connect(t, db)
			counts := populate(t, conn, schemaName, 3000)
			rows, digest := contents(t, conn, schemaName)
			history := sqlxHistory(t, conn, schemaName)
			ids := relationIDs(t, conn, schemaName)
			before := definitions(t, conn, schemaName)
			rust, err := migrations.RustMigrated(ctx, conn, schemaName)
			require.NoError(t, err)
			require.True(t, rust)

			require.NoError(t, migrations.MigratePool(ctx, db.Pool, schemaName))
			versionTable := pgx.Identifier{schemaName, migrations.VersionTable}.Sanitize()
			require.Equal(t, latest(t), version(t, conn, versionTable))
			rust, err = migrations.RustMigrated(ctx, conn, schemaName)
			require.NoError(t, err)
			require.False(t, rust, "an adopted schema is tracked by this package")
			require.Equal(t, ids, relationIDs(t, conn, schemaName), "nothing was re-created")
			require.Equal(t, counts, ledgerCounts(t, conn, schemaName))
			gotRows, gotDigest := contents(t, conn, schemaName)
			require.Equal(t, rows, gotRows)
			require.Equal(t, digest, gotDigest, "every counter is unchanged")
			require.Equal(t, history, sqlxHistory(t, conn, schemaName), "sqlx's history is untouched")

			// Every object the Rust service made is still there as it was,
			// but for step 7, which takes EXECUTE on its trigger functions
			// from PUBLIC (their owner keeps it); the additions are this
			// library's own.
			after := definitions(t, conn, schemaName)
			for _, d := range before {
				if strings.Contains(d, "RETURNS trigger") {
					require.True(t, strings.HasSuffix(d, " owner postgres "), "a default ACL before: %s", d)
					d += "{postgres=X/postgres}"
				}
				require.Contains(t, after, d)
			}
			var added []string
			for _, d := range after {
				if !slices.Contains(before, d) && !slices.Contains(before, strings.TrimSuffix(d, "{postgres=X/postgres}")) {
					added = append(added, d)
				}
			}
			require.NotEmpty(t, added)
			for _, d := range added {
				require.True(t, strings.Contains(d, "runlimit_lock_counter") || strings.Contains(d, "runlimit_capacity_count_truncated") ||
					strings.Contains(d, "runlimit_capacity_truncate") || strings.Contains(d, migrations.VersionTable),
					"an object this library does not add: %s", d)
			}

			require.NoError(t, migrations.MigratePool(ctx, db.Pool, schemaName))
			require.Equal(t, after, definitions(t, conn, schemaName))
			require.Equal(t, latest(t), version(t, conn, versionTable))
		})
	}
}

// Replicas starting at once adopt the schema once.
func TestReplicasAdoptARustSchemaAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	db.MigrateAsRust(t, "public")
	const replicas = 4
	errs := make(chan error, replicas)
	var wg sync.WaitGroup
	for range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- migrations.Migrate(ctx, config(t, db.URL), "")
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	conn := connect(t, db)
	require.Equal(t, latest(t), version(t, conn, migrations.VersionTable))
	var versionRows int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM "+migrations.VersionTable).Scan(&versionRows))
	require.Equal(t, 1, versionRows)
	requireRunlimitSchema(t, conn, "public")
}

// A Rust service's migration that did not finish is refused, and nothing
// is created; a _sqlx_migrations holding only the host's own steps is not
// Runlimit's, and the schema is built as usual.
func TestMigrateChecksTheRustHistory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		history string // run against the Rust-migrated schema's _sqlx_migrations
	}{
		{"a step missing", "DELETE FROM _sqlx_migrations WHERE version = 20260726000000"},
		{"a step failed", "UPDATE _sqlx_migrations SET success = false WHERE version = 20260725000000"},
		{"every step failed", "UPDATE _sqlx_migrations SET success = false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := pgtest.NewEmpty(t)
			db.MigrateAsRust(t, "public")
			conn := connect(t, db)
			_, err := conn.Exec(ctx, tc.history)
			require.NoError(t, err)
			before := definitions(t, conn, "public")

			_, err = migrations.RustMigrated(ctx, conn, "")
			require.ErrorIs(t, err, migrations.ErrRustIncomplete)
			err = migrations.MigratePool(ctx, db.Pool, "")
			require.ErrorIs(t, err, migrations.ErrRustIncomplete)
			require.Equal(t, before, definitions(t, conn, "public"), "nothing was created")
		})
	}
	t.Run("the host's own history", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		db := pgtest.NewEmpty(t)
		conn := connect(t, db)
		_, err := conn.Exec(ctx, `CREATE TABLE _sqlx_migrations (version bigint PRIMARY KEY, description text NOT NULL,
				installed_on timestamptz NOT NULL DEFAULT now(), success boolean NOT NULL, checksum bytea NOT NULL,
				execution_time bigint NOT NULL);
			INSERT INTO _sqlx_migrations VALUES (20250101000000, 'accounts', now(), true, '\x00', 1)`)
		require.NoError(t, err)
		rust, err := migrations.RustMigrated(ctx, conn, "")
		require.NoError(t, err)
		require.False(t, rust)
		require.NoError(t, migrations.MigratePool(ctx, db.Pool, ""))
		require.Equal(t, wantSchema, readSchema(t, conn, "public"))
		require.Len(t, sqlxHistory(t, conn, "public"), 1)
	})
}

// Version 5 is the step whose schema a Rust service's equals.
func TestRustSchemaVersionIsTheRenamingStep(t *testing.T) {
	t.Parallel()
	steps, err := migrations.SQL("")
	require.NoError(t, err)
	require.Equal(t, "005_runlimit_names.sql", steps[migrations.RustSchemaVersion-1].Name)
}

// A populated database of version 3 (the last before this wave) or 4,
// counters in every shard and a third of them expired, migrates to
// Runlimit's names with every row and every count intact; the ledger then
// stays exact as expired rows are deleted.
func TestPopulatedDatabaseKeepsEveryCount(t *testing.T) {
	t.Parallel()
	for _, from := range []int32{3, 4} {
		t.Run(fmt.Sprintf("version %d", from), func(t *testing.T) {
			t.Parallel()
			populatedKeepsEveryCount(t, from)
		})
	}
}

func populatedKeepsEveryCount(t *testing.T, from int32) {
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn := connect(t, db)
	m, err := migrate.NewMigrator(ctx, conn, migrations.VersionTable)
	require.NoError(t, err)
	m.Data["schema"] = `"public"`
	require.NoError(t, m.LoadMigrations(migrations.FS()))
	require.NoError(t, m.MigrateTo(ctx, from))
	_, err = conn.Exec(ctx, `INSERT INTO runlimit_fixed_windows
		SELECT 'p' || (i % 3), 's',
		       decode(lpad(to_hex(i % 256), 2, '0'), 'hex') || substr(sha256(int4send(i)), 2),
		       decode(lpad(to_hex((i / 256) % 256), 2, '0'), 'hex') || substr(sha256(int4send(-i)), 2),
		       now() + ((i % 3) * 90 - 120) * interval '1 minute', now() + ((i % 3) * 90 - 60) * interval '1 minute',
		       1 + i % 7
		FROM generate_series(1, 5000) AS i`)
	require.NoError(t, err)
	rows, err := conn.Query(ctx, "SELECT rows FROM runlimit_capacity_shards ORDER BY shard")
	require.NoError(t, err)
	before, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	var occupied int
	for _, n := range before {
		if n > 0 {
			occupied++
		}
	}
	require.Equal(t, 256, occupied, "every shard holds counters")
	count, digest := contents(t, conn, "public")
	require.Equal(t, 5000, count)
	var expired int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM runlimit_fixed_windows WHERE window_expires_at <= now()").Scan(&expired))
	require.Positive(t, expired)

	// A replica of the previous release (version 4's), its single-check
	// statement prepared on its connection, keeps admitting through the
	// migration.
	var absent func() int64
	if from == 4 {
		previous := connect(t, db)
		const lockCall = `SELECT ("public".runlimit_lock_counter($1::bigint, $2::bytea, $3::bytea, $4::smallint, $5::text, $6::text)).shard_rows`
		_, err = previous.Prepare(ctx, "previous_lock_one", lockCall)
		require.NoError(t, err)
		absent = func() int64 {
			var rows int64
			require.NoError(t, pgx.BeginFunc(ctx, previous, func(tx pgx.Tx) error {
				return tx.QueryRow(ctx, "previous_lock_one", int64(7), make([]byte, 32), make([]byte, 32), int16(0), "1s", "1s").Scan(&rows)
			}))
			return rows
		}
		require.Equal(t, before[0], absent())
	}

	require.NoError(t, migrations.MigratePool(ctx, db.Pool, ""))
	require.Equal(t, latest(t), version(t, conn, migrations.VersionTable))
	require.Equal(t, before, ledgerCounts(t, conn, "public"), "every shard keeps its count")
	if absent != nil {
		require.Equal(t, before[0], absent(), "the previous release's prepared lock call reads the new ledger")
	}
	gotCount, gotDigest := contents(t, conn, "public")
	require.Equal(t, count, gotCount)
	require.Equal(t, digest, gotDigest, "every counter is unchanged")
	var mismatched int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM runlimit_fixed_windows
		WHERE capacity_shard <> (get_byte(config_fingerprint, 0) # get_byte(subject_key, 0))`).Scan(&mismatched))
	require.Zero(t, mismatched, "every row's generated shard is its own")
	requireRunlimitSchema(t, conn, "public")

	tag, err := conn.Exec(ctx, "DELETE FROM runlimit_fixed_windows WHERE window_expires_at <= now()")
	require.NoError(t, err)
	require.Equal(t, int64(expired), tag.RowsAffected())
	var total int64
	for _, n := range ledgerCounts(t, conn, "public") {
		total += n
	}
	require.Equal(t, int64(5000-expired), total)
}
