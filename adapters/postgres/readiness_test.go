package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
	"github.com/runlimit/runlimit/ports"
)

// latestVersion is the version of the newest migration.
func latestVersion(t *testing.T) int32 {
	t.Helper()
	steps, err := migrations.SQL("")
	require.NoError(t, err)
	return steps[len(steps)-1].Version
}

// migrateTo brings db's public schema to version with tern, up or down, as
// an older release of the migrations left it.
func migrateTo(t *testing.T, db *pgtest.Database, version int32) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	m, err := migrate.NewMigrator(ctx, conn, migrations.VersionTable)
	require.NoError(t, err)
	m.Data["schema"] = `"public"`
	require.NoError(t, m.LoadMigrations(migrations.FS()))
	require.NoError(t, m.MigrateTo(ctx, version))
}

// Ready passes only when admissions can run: on a schema a Rust service
// migrated and the migrations did not adopt, or one an older release left,
// Stats answers while every admission fails, and Ready must say so.
func TestReadyProvesAdmissionsCanRun(t *testing.T) {
	t.Parallel()
	want := latestVersion(t)
	for _, tc := range []struct {
		name string
		// schema prepares the database.
		schema func(t *testing.T) *pgtest.Database
		// admits: whether a check is admitted on it.
		admits bool
		// schemaErr is the SchemaError Ready wraps, if any.
		schemaErr *postgres.SchemaError
	}{
		{
			name:   "freshly migrated",
			schema: func(t *testing.T) *pgtest.Database { return pgtest.New(t) },
			admits: true,
		},
		{
			name: "migrated by Rust, not adopted",
			schema: func(t *testing.T) *pgtest.Database {
				db := pgtest.NewEmpty(t)
				db.MigrateAsRust(t, "public")
				return db
			},
			schemaErr: &postgres.SchemaError{Want: want, Rust: true},
		},
		{
			name: "an older Go schema",
			schema: func(t *testing.T) *pgtest.Database {
				db := pgtest.New(t)
				migrateTo(t, db, migrations.RustSchemaVersion)
				return db
			},
			schemaErr: &postgres.SchemaError{Version: migrations.RustSchemaVersion, Want: want},
		},
		{
			// Every object is there, but the schema says it is older: the
			// version alone must fail it, as the next migration may change
			// what a statement means without changing its shape.
			name: "recorded at an older version",
			schema: func(t *testing.T) *pgtest.Database {
				db := pgtest.New(t)
				_, err := db.Pool.Exec(context.Background(), "UPDATE "+migrations.VersionTable+" SET version = version - 1")
				require.NoError(t, err)
				return db
			},
			admits:    true,
			schemaErr: &postgres.SchemaError{Version: want - 1, Want: want},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := tc.schema(t)
			// A pool of its own, whose connections start cold, as a new
			// replica's do.
			store, err := postgres.New(db.NewPool(t, nil), postgres.Config{})
			require.NoError(t, err)
			_, err = store.Stats(ctx)
			require.NoError(t, err, "Stats answers on every one of these schemas")

			err = store.Ready(ctx)
			if tc.schemaErr == nil {
				require.NoError(t, err)
			} else {
				var me *postgres.MaintenanceError
				require.ErrorAs(t, err, &me)
				require.Equal(t, "ready", me.Op)
				var se *postgres.SchemaError
				require.ErrorAs(t, err, &se)
				require.Equal(t, *tc.schemaErr, *se)
				require.ErrorIs(t, err, postgres.ErrSchemaVersion)
				require.False(t, ports.MayHaveConsumedQuota(err))
			}
			stats, err := store.Stats(ctx)
			require.NoError(t, err)
			require.Zero(t, stats.Entries, "Ready consumed no quota")

			hasher, err := domain.NewKeyHasher([]byte("runlimit postgres store tests, 32+ bytes of secret"))
			require.NoError(t, err)
			p := policy(t, "ready", 1, time.Hour)
			_, err = store.AdmitCheck(ctx, domain.NewCheck(p, hasher.KeyString(p, "subject")))
			if tc.admits {
				require.NoError(t, err)
			} else {
				require.Error(t, err, "admissions fail where Ready does")
			}
		})
	}
}

// Without the schema at all, or with the lock function gone from a schema
// that still records the latest version, Ready fails as the warm-up of an
// admission does.
func TestReadyWarmsAsAdmissionsDo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	empty, err := postgres.New(pgtest.NewEmpty(t).Pool, postgres.Config{})
	require.NoError(t, err)
	var me *postgres.MaintenanceError
	require.ErrorAs(t, empty.Ready(ctx), &me)
	require.False(t, errors.Is(me, postgres.ErrSchemaVersion), "no version table: no version to blame")

	db := pgtest.New(t)
	_, err = db.Pool.Exec(ctx, "DROP FUNCTION runlimit_lock_counter")
	require.NoError(t, err)
	store, err := postgres.New(db.NewPool(t, nil), postgres.Config{})
	require.NoError(t, err)
	err = store.Ready(ctx)
	var dbErr *postgres.DatabaseError
	require.ErrorAs(t, err, &dbErr)
	require.Equal(t, "42883", dbErr.Code, "undefined_function, from preparing the admission's statements")
}

// A connection that admissions warmed proves nothing about the schema as it
// is now: with the counters' table or the ledger gone since, or a privilege
// revoked, every admission fails, and Ready must fail too, on the same warm
// connection (it reported ready while logins failed). Once the schema is
// back, Ready and admissions work again on that connection. The lock
// function, which admissions no longer call, is only required to make a
// connection ready: with it gone, admissions on the warm connection go on,
// and Ready fails as a cold connection's warm-up would.
func TestReadyOnAWarmConnectionFindsWhatChangedSince(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, drop, code string
		admits           bool // admissions on the warm connection go on
	}{
		{"counters table dropped", "DROP TABLE runlimit_fixed_windows CASCADE", "42P01", false},
		{"ledger dropped", "DROP TABLE runlimit_capacity_shards CASCADE", "42P01", false},
		{"lock function dropped", "DROP FUNCTION runlimit_lock_counter", "42883", true},
		{"select revoked", "REVOKE SELECT ON runlimit_fixed_windows FROM %s", "42501", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := pgtest.New(t)
			svc := db.NewServiceRole(t, "public")
			pool := svc.NewPool(t, func(c *pgxpool.Config) { c.MaxConns = 1 })
			store, err := postgres.New(pool, postgres.Config{})
			require.NoError(t, err)
			hasher, err := domain.NewKeyHasher([]byte("runlimit postgres store tests, 32+ bytes of secret"))
			require.NoError(t, err)
			p := policy(t, "warm.ready", 5, time.Hour)
			check := domain.NewCheck(p, hasher.KeyString(p, "subject"))
			_, err = store.AdmitCheck(ctx, check)
			require.NoError(t, err)
			require.NoError(t, store.Ready(ctx), "the pool's one connection is warm")
			before := backends(t, pool)

			drop := tc.drop
			if strings.Contains(drop, "%s") {
				drop = fmt.Sprintf(drop, pgx.Identifier{svc.Name}.Sanitize())
			}
			_, err = db.Pool.Exec(ctx, drop)
			require.NoError(t, err)
			_, err = store.AdmitCheck(ctx, check)
			if tc.admits {
				require.NoError(t, err, "admissions on the warm connection do not need what was dropped")
			} else {
				require.Error(t, err, "admissions fail on the warm connection")
			}

			err = store.Ready(ctx)
			var me *postgres.MaintenanceError
			require.ErrorAs(t, err, &me, "Ready must not say ready while admissions fail")
			require.Equal(t, "ready", me.Op)
			var dbErr *postgres.DatabaseError
			require.ErrorAs(t, err, &dbErr)
			require.Equal(t, tc.code, dbErr.Code)
			require.False(t, ports.MayHaveConsumedQuota(err))
			require.Equal(t, before, backends(t, pool), "the connection stays in the pool, cold")
		})
	}
}

// Ready is bounded by the store's own timeouts, refuses a nil context and
// a closed store, and spells no password.
func TestReadyIsBoundedAndSafe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	pool := db.NewPool(t, func(c *pgxpool.Config) { c.MaxConns = 1 })
	// A store with the default timeouts opens, prepares and warms the
	// pool's one connection, however slow a loaded machine makes that; the
	// store under test then only ever acquires it.
	warm, err := postgres.New(pool, postgres.Config{})
	require.NoError(t, err)
	require.NoError(t, warm.Ready(ctx))
	store, err := postgres.New(pool, postgres.Config{AcquireTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, store.Ready(ctx))

	// The only connection is taken: Ready gives up with ErrTimeout though
	// ctx has no deadline and never ends, so the bound is AcquireTimeout.
	held, err := pool.Acquire(ctx)
	require.NoError(t, err)
	err = store.Ready(ctx)
	require.ErrorIs(t, err, postgres.ErrTimeout)
	held.Release()
	require.NoError(t, store.Ready(ctx))

	//lint:ignore SA1012 the nil context is the point
	require.ErrorIs(t, store.Ready(nil), ports.ErrNilContext)
	require.NoError(t, store.Close())
	require.ErrorIs(t, store.Ready(ctx), postgres.ErrClosed)
	require.ErrorIs(t, (*postgres.Store)(nil).Ready(ctx), postgres.ErrClosed)
	require.ErrorIs(t, (&postgres.Store{}).Ready(ctx), postgres.ErrClosed)

	const password = "R3ady-pa55w0rd"
	cfg, err := pgxpool.ParseConfig("postgres://runlimit:" + url.QueryEscape(password) + "@127.0.0.1:1/x?sslmode=disable&connect_timeout=5")
	require.NoError(t, err)
	nowhere, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(nowhere.Close)
	store, err = postgres.New(nowhere, postgres.Config{AcquireTimeout: 5 * time.Second})
	require.NoError(t, err)
	err = store.Ready(ctx)
	require.Error(t, err)
	requireNoDriverError(t, err)
	leakcheck.Check(t, "readiness error", err, []byte(password))
}

// A role holding CREATE on the schema (every role, on public, before
// PostgreSQL 15) plants views named like the version table, which a schema
// vendored into the host's migrations lacks, and like sqlx's, each calling
// its own function. Ready, run as the service's role, refuses the schema,
// naming the object, before it reads either: reading them would run the
// planter's code with the service's rights, and report whatever version
// the planter likes.
func TestReadyRefusesAnObjectAnotherRolePlanted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	svc := db.NewServiceRole(t, "public")
	_, err := db.Pool.Exec(ctx, "DROP TABLE public.runlimit_schema_version")
	require.NoError(t, err)
	store, err := postgres.New(svc.NewPool(t, nil), postgres.Config{})
	require.NoError(t, err)
	require.NoError(t, store.Ready(ctx), "a vendored schema is ready")

	calls := db.PlantVersionView(t, "public")
	err = store.Ready(ctx)
	require.ErrorIs(t, err, postgres.ErrUntrustedSchema)
	require.ErrorIs(t, err, migrations.ErrUntrustedSchema)
	var me *postgres.MaintenanceError
	require.ErrorAs(t, err, &me)
	require.Equal(t, "ready", me.Op)
	require.False(t, me.Timeout)
	require.Contains(t, err.Error(), `"_sqlx_migrations" in schema "public"`)
	require.Zero(t, calls(), "Ready ran the planted code")
}
