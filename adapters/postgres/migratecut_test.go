package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/migrations"
)

// migrationCutPoints is how many points of each direction of a whole
// migration's exchange the sweep below cuts (half under the race
// detector): a migration is tens of round trips, each cut costs a new
// migration, and every round trip fails alike.
const migrationCutPoints = 4

// A migration whose connection is cut, at points spread over the round
// trips of migrating an empty schema in both directions, fails with an
// error and leaves the schema at a version that the next run completes:
// that run succeeds and records the latest version, the store is then
// Ready on the schema, and the
// migrations' advisory lock is never left held, since the cut connection's
// session has ended.
func TestMigrationSurvivesACutConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	const app, schema = "cut-migrate", "cut_migrate"
	cut := &cutter{}
	cfg, err := pgx.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.RuntimeParams["application_name"] = app
	cut.installConn(cfg)
	steps, err := migrations.SQL(schema)
	require.NoError(t, err)
	latest := steps[len(steps)-1].Version
	store, err := postgres.New(db.Pool, postgres.Config{Schema: schema})
	require.NoError(t, err)

	fresh := func() {
		t.Helper()
		_, err := db.Pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		require.NoError(t, err)
	}
	version := func() int32 {
		t.Helper()
		var v *int32
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT CASE WHEN pg_catalog.to_regclass($1) IS NULL THEN NULL
			ELSE (pg_catalog.xpath('//v/text()', pg_catalog.query_to_xml('SELECT max(version) AS v FROM '||$1, false, false, '')))[1]::text::int END`,
			schema+"."+migrations.VersionTable).Scan(&v))
		if v == nil {
			return 0
		}
		return *v
	}
	advisoryLocks := func() int {
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_locks WHERE locktype = 'advisory'
			AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())`).Scan(&n))
		return n
	}

	fresh()
	cut.record()
	require.NoError(t, migrations.Migrate(ctx, cfg, schema))
	require.False(t, cut.stop())
	tr := recordedTrace(t, cut)
	require.Equal(t, latest, version())

	per := migrationCutPoints
	if raceEnabled {
		per /= 2
	}
	tried := 0
	for _, dir := range []int{toServer, fromServer} {
		all := tr.tripPoints(dir)
		for i := range per {
			at := all[i*(len(all)-1)/(per-1)]
			tried++
			where := describeCut(dir, at)
			fresh()
			done := make(chan error, 1)
			cut.arm(dir, at)
			go func() { done <- migrations.Migrate(ctx, cfg, schema) }()
			err := testkit.Receive(t, done, time.Minute, "the answer of a migration whose connection was "+where)
			require.True(t, cut.stop(), "%s: the migration's exchange never reached the cut", where)
			require.Error(t, err, "%s: a migration whose connection was cut succeeded", where)
			require.Eventually(t, func() bool { return backendsOf(&fixture{db: db}, app) == 0 }, 10*time.Second, time.Millisecond,
				"%s: the cut connection's server session never ended", where)
			require.Zero(t, advisoryLocks(), "%s: the migration lock is still held", where)
			left := version()
			require.LessOrEqual(t, left, latest, "%s", where)

			require.NoError(t, migrations.Migrate(ctx, cfg, schema), "%s: the migration after the cut (left at version %d)", where, left)
			require.Equal(t, latest, version(), "%s", where)
			require.Zero(t, advisoryLocks(), "%s: the migration lock is still held", where)
		}
	}
	// The schema the last migration after a cut left serves the store.
	require.NoError(t, store.Ready(ctx))
	t.Logf("%d cut points of %d round trips", tried, len(tr.trips[fromServer]))
}
