package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

// step is one line of a script run on both stores: move time, clean up, or
// apply checks (one batch).
type step struct {
	name    string
	advance time.Duration
	cleanup bool
	checks  []domain.Check
}

// The same script on the memory store (frozen clock) and on PostgreSQL
// gives the same decisions: outcomes, failing indexes, reasons, limits and
// remaining units.
//
// Durations differ in one direction only. The memory store's clock moves
// only when the script advances it, so its durations are the script's exact
// values. PostgreSQL's clock keeps running while the script runs, so at its
// sample less time is left than the script says: its durations are at most
// memory's, and at least memory's minus the real time the script has taken.
// Seen from the caller, that same database sample was taken before the
// answer arrived, so the duration overstates the time really left (by the
// transport time) and never understates it; the test checks that too.
func TestSameDecisionsAsMemoryStore(t *testing.T) {
	t.Parallel()
	const slots = 4
	f := setup(t, postgres.Config{RowsPerShard: slots})
	clock := memory.NewManualClock()
	mem, err := memory.New(memory.Config{MaxKeys: slots, Shards: 1, Clock: clock})
	require.NoError(t, err)

	// Every key lands on one PostgreSQL shard, so both stores have exactly
	// `slots` slots for the script's keys.
	a := policy(t, "script.a", 3, time.Minute)
	b := policy(t, "script.b", 1, 10*time.Second)
	as := f.checksInShard(t, a, 0, 5)
	bs := f.checksInShard(t, b, 0, 1)
	shadowA, err := a.WithMode(domain.Shadow)
	require.NoError(t, err)
	cost2, err := domain.NewCheckCost(a, as[0].SubjectKey(), 2)
	require.NoError(t, err)

	script := []step{
		{name: "first check anchors a window", checks: as[:1]},
		{name: "a cost of two", checks: []domain.Check{cost2}},
		{name: "exhausted", checks: as[:1]},
		{name: "a batch fails at its exhausted check", checks: []domain.Check{bs[0], as[0]}},
		{name: "the denied batch consumed nothing", checks: bs[:1]},
		{advance: 10 * time.Second},
		{name: "an expired window renews in place", checks: bs[:1]},
		{name: "still exhausted, later", checks: as[:1]},
		{name: "shadow mode reports without consuming", checks: []domain.Check{domain.NewCheck(shadowA, as[0].SubjectKey())}},
		{name: "new keys fill the partition", checks: as[2:4]},
		{name: "a full partition refuses a new key", checks: as[4:5]},
		// Memory removes a few expired entries on every check; PostgreSQL
		// keeps expired rows until cleanup. The script cleans up before it
		// needs the slots back, so both paths meet.
		{advance: time.Minute},
		{name: "cleanup frees expired slots", cleanup: true},
		{name: "a freed slot takes a new key", checks: as[4:5]},
		{name: "an old key starts a fresh window", checks: as[:1]},
		{name: "a batch of fresh and active keys", checks: []domain.Check{as[1], as[4], as[0]}},
	}

	ctx := context.Background()
	start := time.Now()
	for _, st := range script {
		switch {
		case st.advance > 0:
			clock.Advance(st.advance)
			shift(t, f.db.Pool, st.advance)
		case st.cleanup:
			_, err := mem.CleanupExpired(ctx, 100)
			require.NoError(t, err)
			_, err = f.store.CleanupExpired(ctx, 100)
			require.NoError(t, err)
			ms, err := mem.Stats(ctx)
			require.NoError(t, err)
			ps, err := f.store.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, ms.Entries, ps.Entries, st.name)
		default:
			want, err := tryAdmit(ctx, mem, st.checks...)
			require.NoError(t, err, st.name)
			got, err := tryAdmit(ctx, f.store, st.checks...)
			require.NoError(t, err, st.name)
			f.requireSameDecision(t, st, want, got, time.Since(start))
		}
	}
}

func (f *fixture) requireSameDecision(t *testing.T, st step, want, got domain.BatchDecision, elapsed time.Duration) {
	t.Helper()
	require.Equal(t, want.Outcome(), got.Outcome(), st.name)
	require.Equal(t, want.Size(), got.Size(), st.name)
	if wi, wd, ok := want.Denied(); ok {
		gi, gd, _ := got.Denied()
		require.Equal(t, wi, gi, st.name)
		require.Equal(t, wd.Reason(), gd.Reason(), st.name)
		if wd.Reason() == domain.StorageCapacity {
			// PostgreSQL does not look up a full shard's earliest expiry.
			_, has := gd.RetryAfter()
			require.False(t, has, st.name)
			return
		}
		wr, _ := wd.RetryAfter()
		gr, has := gd.RetryAfter()
		require.True(t, has, st.name)
		f.requireDuration(t, st, wr, gr, elapsed, st.checks[gi])
		return
	}
	require.Len(t, got.Decisions(), len(want.Decisions()), st.name)
	for i, wd := range want.Decisions() {
		wa, _ := wd.Allowance()
		ga, _ := got.Decisions()[i].Allowance()
		require.Equal(t, wa.Limit, ga.Limit, st.name)
		require.Equal(t, wa.Remaining, ga.Remaining, st.name)
		f.requireDuration(t, st, wa.ResetAfter, ga.ResetAfter, elapsed, st.checks[i])
	}
}

// requireDuration bounds PostgreSQL's duration got by memory's exact want
// and, at the caller, by the time really left on c's window.
func (f *fixture) requireDuration(t *testing.T, st step, want, got, elapsed time.Duration, c domain.Check) {
	t.Helper()
	require.Positive(t, got, st.name)
	require.LessOrEqual(t, got, want, "%s: the database clock runs ahead of the script, never behind", st.name)
	require.GreaterOrEqual(t, got, want-elapsed, "%s: only the script's own running time separates the two", st.name)
	stored, ok := f.stored(t, c)
	require.True(t, ok, st.name)
	left := stored.Expires.Sub(f.databaseNow(t))
	require.GreaterOrEqual(t, got, left, "%s: a duration may overstate the time left, never understate it", st.name)
}
