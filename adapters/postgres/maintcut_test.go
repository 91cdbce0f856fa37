package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/ports"
)

// The maintenance paths are cut as admissions are (see
// TestAdmissionSurvivesACutConnectionAtEveryPoint): at every message
// boundary of a warm call's exchange, in both directions. Each call must
// return a [*postgres.MaintenanceError] or an answer that is true: a
// cleanup's MayHaveRemoved must be false when its deletion could not have
// committed and true once COMMIT may have run, and the table must agree
// with it; Stats, TableStats and Ready never report success from a read
// they did not finish. After every cut, the cut connection's server session is gone,
// the ledger counts the rows that remain, no counter that had not expired
// is removed, and the same store admits on a new connection and answers
// correctly, and a later call of the same kind finishes the job.
func TestMaintenanceSurvivesACutConnectionAtEveryPoint(t *testing.T) {
	t.Parallel()
	for _, sweep := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"cleanup", sweepCleanupCuts},
		{"stats", func(t *testing.T) { sweepStatsCuts(t, false) }},
		{"table stats", func(t *testing.T) { sweepStatsCuts(t, true) }},
		{"ready", sweepReadyCuts},
	} {
		t.Run(sweep.name, func(t *testing.T) {
			t.Parallel()
			sweep.run(t)
		})
	}
}

// maintenanceSweep is one maintenance call swept by cuts: its store, on
// a database of its own, behind a cutter.
type maintenanceSweep struct {
	f     *fixture
	app   string
	cut   *cutter
	store *postgres.Store
	pool  *pgxpool.Pool
	p     domain.Policy
	// active is a counter that never expires during the sweep: every
	// recovery admits it once more.
	active domain.Check
	used   int64
}

func newMaintenanceSweep(t *testing.T, name string) *maintenanceSweep {
	t.Helper()
	m := &maintenanceSweep{f: setup(t, postgres.Config{}), app: "cut-" + name, cut: &cutter{}}
	m.store, m.pool = cutStore(t, m.f, postgres.Config{}, m.app, m.cut)
	m.p = policy(t, "cut."+name, 1_000_000, time.Hour)
	m.active = m.f.check(m.p, "active")
	m.recoverAdmission(t, "warm-up")
	return m
}

// trace records the exchange of one call of run.
func (m *maintenanceSweep) trace(t *testing.T, run func() error) trace {
	t.Helper()
	m.cut.record()
	require.NoError(t, run())
	require.False(t, m.cut.stop())
	return recordedTrace(t, m.cut)
}

// cutCall runs call with the connection cut after at bytes in direction
// dir, waits until the cut connection's server session has ended (rolling
// back what it had not committed), and returns call's error.
func (m *maintenanceSweep) cutCall(t *testing.T, where string, dir int, at int64, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	m.cut.arm(dir, at)
	go func() { done <- call() }()
	err := testkit.Receive(t, done, time.Minute, "the answer of a call whose connection was "+where)
	require.True(t, m.cut.stop(), "%s: the call's exchange never reached the cut", where)
	require.Eventually(t, func() bool { return backendsOf(m.f, m.app) == 0 }, 10*time.Second, time.Millisecond,
		"%s: the cut connection's server session never ended", where)
	requireNoneAcquired(t, m.pool)
	return err
}

// recoverAdmission requires the store to admit the active counter, on a
// new connection after a cut, and count it exactly once.
func (m *maintenanceSweep) recoverAdmission(t *testing.T, where string) {
	t.Helper()
	d, err := tryAdmit(context.Background(), m.store, m.active)
	require.NoError(t, err, "%s: the admission after the cut", where)
	requireAllowed(t, d)
	m.used++
	require.Equal(t, m.used, usedOf(t, m.f, m.active), "%s: the admission after the cut", where)
	requireLedgerExact(t, m.f, where)
}

// requireFailedClosed requires err to be op's [*postgres.MaintenanceError]
// for a backend failure, which consumed no quota.
func requireFailedClosed(t *testing.T, err error, op, where string) *postgres.MaintenanceError {
	t.Helper()
	var me *postgres.MaintenanceError
	require.ErrorAs(t, err, &me, "%s", where)
	require.Equal(t, op, me.Op, "%s", where)
	require.NotErrorIs(t, err, domain.ErrInvalidInput, "%s", where)
	require.False(t, ports.MayHaveConsumedQuota(err), "%s", where)
	return me
}

func describeCut(dir int, at int64) string {
	return fmt.Sprintf("cut after %d bytes %s", at, map[int]string{toServer: "sent", fromServer: "received"}[dir])
}

// expiredPerPoint is how many counters each cleanup of the sweep finds
// expired: one digit, so that every cleanup's answer has the same layout.
const expiredPerPoint = 2

func sweepCleanupCuts(t *testing.T) {
	m := newMaintenanceSweep(t, "cleanup")
	ctx := context.Background()
	subject := 0
	// expire gives the store expiredPerPoint new counters whose windows
	// have ended.
	expire := func() []domain.Check {
		var cs []domain.Check
		for range expiredPerPoint {
			subject++
			c := m.f.check(m.p, fmt.Sprintf("s%d", subject))
			requireAllowed(t, admit(t, m.store, c))
			k := c.CounterKey().Bytes()
			_, err := m.f.db.Pool.Exec(ctx, `UPDATE runlimit_fixed_windows
				SET window_started_at = window_started_at - interval '2 hours',
				    window_expires_at = window_expires_at - interval '2 hours'
				WHERE config_fingerprint = $1 AND subject_key = $2`, k[:32], k[32:])
			require.NoError(t, err)
			cs = append(cs, c)
		}
		return cs
	}
	cleanup := func() (int, error) { return m.store.CleanupExpired(ctx, 100) }
	gone := func(cs []domain.Check) int {
		n := 0
		for _, c := range cs {
			if _, ok := m.f.stored(t, c); !ok {
				n++
			}
		}
		return n
	}

	// The cleanup's statements are prepared before its exchange is
	// recorded.
	expire()
	n, err := cleanup()
	require.NoError(t, err)
	require.Equal(t, expiredPerPoint, n)
	expire()
	tr := m.trace(t, func() error {
		n, err := cleanup()
		require.Equal(t, expiredPerPoint, n)
		return err
	})
	// Round trip 1 is BEGIN and the settings, round trip 2 the deletion
	// and COMMIT, whose Execute is the last message before the Sync.
	require.Len(t, tr.trips[toServer], 2, "a cleanup writes two round trips")
	require.Len(t, tr.trips[fromServer], 2, "a cleanup reads two answers")
	sent := tr.types[toServer]
	require.Equal(t, "ES", string(sent[len(sent)-2:]))
	commitSent := tr.ends[toServer][len(sent)-2]

	tried := 0
	for _, dir := range []int{toServer, fromServer} {
		for _, at := range tr.boundaries(dir) {
			tried++
			where := describeCut(dir, at)
			cs := expire()
			type answer struct {
				n   int
				err error
			}
			var got answer
			err := m.cutCall(t, where, dir, at, func() error {
				got.n, got.err = cleanup()
				return got.err
			})
			removed := gone(cs)
			require.Contains(t, []int{0, len(cs)}, removed, "%s: a cleanup committed in part", where)
			_, ok := m.f.stored(t, m.active)
			require.True(t, ok, "%s: a counter that had not expired was removed", where)
			requireLedgerExact(t, m.f, where)

			beforeCommitTrip := dir == toServer && at <= tr.trips[toServer][0] || dir == fromServer && at < tr.trips[fromServer][0]
			beforeCommit := beforeCommitTrip || dir == toServer && at < commitSent || dir == fromServer && at == tr.trips[fromServer][0]
			if err == nil {
				require.False(t, beforeCommit, "%s: a cleanup that could not commit was answered", where)
				require.Equal(t, len(cs), got.n, "%s", where)
				require.Equal(t, len(cs), removed, "%s: an answered cleanup did not commit", where)
			} else {
				me := requireFailedClosed(t, err, "cleanup", where)
				require.Equal(t, me.MayHaveRemoved, me.MayHaveRemovedRows(), "%s", where)
				require.Zero(t, got.n, "%s", where)
				if !me.MayHaveRemoved {
					require.Zero(t, removed, "%s: the error says no rows were removed, but they were (%v)", where, err)
				}
				if beforeCommitTrip {
					require.False(t, me.MayHaveRemoved, "%s: cut before the deletion was sent, the error says rows may have been removed (%v)", where, err)
				}
				if !beforeCommit {
					require.True(t, me.MayHaveRemoved, "%s: cut once COMMIT may have run, the error says no rows were removed (%v)", where, err)
				}
			}
			if beforeCommit {
				require.Zero(t, removed, "%s: removed although COMMIT could not reach the server", where)
			}

			m.recoverAdmission(t, where)
			// A later cleanup finishes the job, and removes nothing else.
			n, err := cleanup()
			require.NoError(t, err, "%s: the cleanup after the cut", where)
			require.Equal(t, len(cs)-removed, n, "%s: the cleanup after the cut", where)
			require.Equal(t, len(cs), gone(cs), "%s", where)
			_, ok = m.f.stored(t, m.active)
			require.True(t, ok, "%s: a counter that had not expired was removed", where)
			requireLedgerExact(t, m.f, where)
			requireNoneAcquired(t, m.pool)
		}
	}
	t.Logf("%d cut points", tried)
}

// sweepStatsCuts cuts Stats, or with table TableStats (what the runlimit
// status command reads), which read the capacity ledger in a read-only
// transaction: round trip 1 begins it and sets its timeouts, round trip 2
// reads the ledger, TableStats' round trip 3 the table's sizes, and the
// session's end rolls the transaction back.
func sweepStatsCuts(t *testing.T, table bool) {
	name := "stats"
	if table {
		name = "tablestats"
	}
	m := newMaintenanceSweep(t, name)
	ctx := context.Background()
	for i := range 3 {
		requireAllowed(t, admit(t, m.store, m.f.check(m.p, fmt.Sprintf("s%d", i))))
	}
	var st ports.Stats
	var ts postgres.TableStats
	stats := func() error {
		var err error
		if table {
			ts, err = m.store.TableStats(ctx)
		} else {
			st, err = m.store.Stats(ctx)
		}
		return err
	}
	// requireTrue requires the stats to be the table's.
	requireTrue := func(where string) {
		t.Helper()
		rows := m.f.rowCount(t)
		if table {
			require.Equal(t, rows, ts.Rows, "%s: stats reported a count that is not the table's", where)
			require.Len(t, ts.Fullest, postgres.FullestShardCount, "%s", where)
			require.Positive(t, ts.TableBytes, "%s", where)
			return
		}
		require.Equal(t, rows, st.Entries, "%s: stats reported a count that is not the table's", where)
		require.Equal(t, postgres.ShardCount, st.Shards, "%s", where)
		require.Len(t, st.Headroom, postgres.ShardCount, "%s", where)
		require.Equal(t, st.Capacity-st.Entries, sum(st.Headroom), "%s: headroom that is not the ledger's", where)
	}
	require.NoError(t, stats())
	tr := m.trace(t, stats)
	// The last round trip rolls back; the one before reads the last of
	// the numbers.
	trips := len(tr.trips[fromServer])
	wantTrips := 3
	if table {
		wantTrips = 4
	}
	require.Equal(t, wantTrips, trips, "the round trips of a stats read")
	read := [2]int64{toServer: tr.trips[toServer][trips-2], fromServer: tr.trips[fromServer][trips-2]}

	// TableStats reads the ledger as Stats does: its sweep cuts once per
	// round trip and direction (see tripPoints).
	points := tr.boundaries
	if table {
		points = tr.tripPoints
	}
	tried := 0
	for _, dir := range []int{toServer, fromServer} {
		for _, at := range points(dir) {
			tried++
			where := describeCut(dir, at)
			st, ts = ports.Stats{}, postgres.TableStats{}
			err := m.cutCall(t, where, dir, at, stats)
			if err == nil {
				require.GreaterOrEqual(t, at, read[dir], "%s: stats answered before they were read in full", where)
				requireTrue(where)
			} else {
				me := requireFailedClosed(t, err, "stats", where)
				require.False(t, me.MayHaveRemoved, "%s", where)
				require.Zero(t, st, "%s: a failed stats read returned numbers", where)
				require.Zero(t, ts, "%s: a failed stats read returned numbers", where)
			}
			m.recoverAdmission(t, where)
			require.NoError(t, stats(), "%s: the stats after the cut", where)
			requireTrue(where)
		}
	}
	t.Logf("%d cut points", tried)
}

// sweepReadyCuts cuts Ready, which checks the schema, reads the ledger,
// and makes its connection ready as an admission does, in many round
// trips of many messages that fail alike, each cut once, a byte into its
// answer (see tripPoints): Ready writes nothing, so a request the server
// ran fails as one whose answer was cut does. A
// cut anywhere but in the last round trip, the rollback of what the
// warm-up read, after which everything has been proven, must fail it.
//
// Every cut Ready runs on a new connection that one admission has made
// ready, as the exchange was recorded on: a Ready on a connection that has
// run one before sends fewer messages.
func sweepReadyCuts(t *testing.T) {
	m := newMaintenanceSweep(t, "ready")
	ctx := context.Background()
	ready := func() error { return m.store.Ready(ctx) }
	m.pool.Reset()
	m.recoverAdmission(t, "a new connection")
	tr := m.trace(t, ready)
	trips := tr.trips[fromServer]
	require.GreaterOrEqual(t, len(trips), 2)
	proven := [2]int64{toServer: tr.trips[toServer][len(tr.trips[toServer])-2], fromServer: trips[len(trips)-2]}
	m.pool.Reset()
	m.recoverAdmission(t, "a new connection")

	tried := 0
	for _, dir := range []int{fromServer} {
		for _, at := range tr.tripPoints(dir) {
			tried++
			where := describeCut(dir, at)
			err := m.cutCall(t, where, dir, at, ready)
			if err == nil {
				require.Greater(t, at, proven[dir], "%s: Ready answered before it had proven the store ready", where)
			} else {
				me := requireFailedClosed(t, err, "ready", where)
				require.False(t, me.MayHaveRemoved, "%s", where)
			}
			m.recoverAdmission(t, where)
		}
	}
	require.NoError(t, ready(), "Ready after the cuts")
	t.Logf("%d cut points, %d round trips", tried, len(trips))
}
