package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// lifecycleScenario checks what a store reports around the calls that
// fail: a report that travels beside an error (the zero Stats, always), the
// occupancy after calls refused for a done context (unchanged), the count
// of a cleanup cut short by its context (what it removed), and a readiness
// probe that follows its own context and is not spoilt by a caller's.
func lifecycleScenario() scenario {
	return scenario{name: "lifecycle", cases: []testCase{
		{name: "stats_beside_an_error_are_zero", run: testStatsBesideAnErrorAreZero},
		{name: "refused_calls_leave_stats_alone", single: true, opts: capacityOptions, run: testRefusedCallsLeaveStats},
		{name: "cleanup_cut_short_counts_what_it_removed", run: testCleanupCutShortCounts},
		{name: "readiness_follows_its_context_and_outlives_a_callers", run: testReadinessFollowsContext},
	}}
}

// statsWith calls Stats with ctx, named ctxName in the operation log.
func (f *fixture) statsWith(sr ports.StatsReporter, ctx context.Context, ctxName string) (ports.Stats, error) {
	f.rep.called(StatsReporter)
	var s ports.Stats
	err := f.guard(func() (err error) {
		s, err = sr.Stats(ctx)
		return err
	})
	f.log.add("Stats(%s) → %+v, error: %v", ctxName, s, err)
	return s, err
}

// testStatsBesideAnErrorAreZero reads Stats on a store that holds a counter
// and has reported it, then with a done context, then after Close: every
// error comes with the zero Stats (ports.StatsReporter), so that a
// dashboard reading the report before the error never shows a store that
// is gone, or a report the call was refused, as if it were live. After
// Close the error matches ports.ErrClosed even when the context is done
// too (ports.Closer).
func testStatsBesideAnErrorAreZero(t *testing.T, f *fixture) {
	const g = "lifecycle: beside an error, Stats returns the zero Stats (ports.StatsReporter)"
	sr := f.lifecycleStats()
	p := f.policy(2, window)
	f.allow(f.check(p, f.key()), 1, g)
	live, err := f.statsWith(sr, f.ctx, "ctx")
	require.NoError(t, err, "%s: Stats of an open store", g)
	require.EqualValues(t, 1, live.Entries, "%s: the store holds the case's counter", g)
	done, cancel := context.WithCancel(f.ctx)
	cancel()
	s, err := f.statsWith(sr, done, "done ctx")
	if err != nil {
		require.Equal(t, ports.Stats{}, s, "%s: Stats with a done ctx failed (%v) and returned a report beside the error", g, err)
	}
	c, ok := f.inst.Store.(ports.Closer)
	if !ok {
		return
	}
	f.closeStore(c, g)
	for _, dc := range []struct {
		name string
		ctx  context.Context
	}{{"ctx", f.ctx}, {"done ctx", done}} {
		s, err := f.statsWith(sr, dc.ctx, dc.name)
		require.Error(t, err, "%s: Stats(%s) after Close reported %+v", g, dc.name, s)
		require.ErrorIs(t, err, ports.ErrClosed, "%s: Stats(%s) after Close must fail with an error matching ports.ErrClosed, "+
			"whatever the context (ports.Closer)", g, dc.name)
		require.Equal(t, ports.Stats{}, s, "%s: Stats(%s) after Close returned a report beside its error: the store it "+
			"describes is gone", g, dc.name)
	}
	// A nil context is the caller's mistake, whatever the store's state
	// (ports.Closer).
	var nilCtx context.Context
	s, err = f.statsWith(sr, nilCtx, "nil ctx")
	require.ErrorIs(t, err, ports.ErrNilContext, "%s: Stats(nil ctx) after Close is the caller's mistake (ports.Closer)", g)
	require.Equal(t, ports.Stats{}, s, "%s: Stats(nil ctx) after Close returned a report beside its error", g)
}

// testRefusedCallsLeaveStatsAlone makes single checks and a batch of new
// keys with contexts done before the call, and a cleanup with one: each is
// refused, and Stats afterwards reports exactly what it reported before. A
// store that reserves a slot (or counts an entry) before it looks at the
// context, and forgets to give it back on the error path, reports a
// partition filling up with counters that do not exist.
func testRefusedCallsLeaveStats(t *testing.T, f *fixture) {
	const g = "lifecycle: calls refused for a done context leave Stats as it was"
	sr := f.lifecycleStats()
	p := f.policy(2, window)
	part := f.somePart(p)
	f.allow(f.check(p, f.keyIn(p, part)), 1, g)
	before, err := f.statsWith(sr, f.ctx, "ctx")
	require.NoError(t, err, "%s: Stats", g)
	cancelled, cancel := context.WithCancel(f.ctx)
	cancel()
	expired, cancelExpired := context.WithDeadline(f.ctx, time.Unix(0, 0))
	defer cancelExpired()
	for _, dc := range []struct {
		name string
		ctx  context.Context
	}{{"cancelled ctx", cancelled}, {"ctx past its deadline", expired}} {
		d, err := f.applyWith(dc.ctx, dc.name, f.check(p, f.keyIn(p, part)), f.path)
		require.Error(t, err, "%s: a check with a %s was admitted: %s", g, dc.name, describe(d))
		checks := []domain.Check{f.check(p, f.keyIn(p, part)), f.check(p, f.keyIn(p, part))}
		err = f.guard(func() error {
			_, err := f.limiter.CheckAll(dc.ctx, checks)
			return err
		})
		f.log.add("batch %s via Admit with %s → error: %v", f.log.batch(checks), dc.name, err)
		require.Error(t, err, "%s: a batch with a %s was admitted", g, dc.name)
		if _, ok := f.inst.Store.(ports.Cleaner); ok {
			_, err := f.cleanupWith(dc.ctx, dc.name, 1)
			require.Error(t, err, "%s: CleanupExpired with a %s", g, dc.name)
		}
	}
	after, err := f.statsWith(sr, f.ctx, "ctx")
	require.NoError(t, err, "%s: Stats", g)
	require.Equal(t, before.Entries, after.Entries, "%s: the refused calls changed the entries", g)
	require.Equal(t, before.Headroom, after.Headroom, "%s: the refused calls changed the headroom of the partitions", g)
}

// rowsRemover is implemented by cleanup errors that say whether rows may
// have been removed though the call failed (a commit whose outcome is
// unknown).
type rowsRemover interface{ MayHaveRemovedRows() bool }

// testCleanupCutShortCounts cancels a cleanup's context while it runs (on
// a store that reads a ManualClock, just after its clock sample) over
// expired counters in several partitions. The store may finish, stop at
// once or stop midway, but the count it returns, beside an error or not,
// is what it removed: Stats' entries fall by exactly that count. A store
// that removes in rounds and answers a cancellation between them with
// (0, ctx.Err()) tells a maintenance loop that its budget went unused and
// hides the removals from its metrics.
func testCleanupCutShortCounts(t *testing.T, f *fixture) {
	const g = "lifecycle: a cleanup cut short by its context returns the count it removed (ports.Cleaner)"
	if _, ok := f.inst.Store.(ports.Cleaner); !ok {
		f.skip("lifecycle: the store does not implement ports.Cleaner")
	}
	sr := f.lifecycleStats()
	p := f.policy(1, window)
	const perPart = 3
	for q := range min(f.parts, 4) {
		f.admitNew(p, q, perPart, g)
	}
	f.advance(window)
	before, err := f.statsWith(sr, f.ctx, "ctx")
	require.NoError(t, err, "%s: Stats", g)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	first := func(context.Context) result { return f.cleanupOp(int(before.Entries))(ctx) }
	nothing := func(context.Context) result { return result{} }
	r, _, held := f.pinnedRace(g, first, cancel, nothing)
	f.log.add("race: CleanupExpired(%d) with its context cancelled (held after its clock sample: %v) → %d, error: %v",
		before.Entries, held, r.removed, r.err)
	var pe *panicError
	require.False(t, errors.As(r.err, &pe), "%s: the store panicked: %v", g, r.err)
	after, err := f.statsWith(sr, f.ctx, "ctx")
	require.NoError(t, err, "%s: Stats", g)
	var rr rowsRemover
	if errors.As(r.err, &rr) && rr.MayHaveRemovedRows() {
		// The store does not know what it removed.
		return
	}
	require.Equal(t, int(before.Entries-after.Entries), r.removed, "%s: the store removed %d expired counters and said %d "+
		"(error: %v)", g, before.Entries-after.Entries, r.removed, r.err)
}

// testReadinessFollowsContext probes a store with a nil context (the
// caller's mistake), with a done one (refused with its error: an admission
// could not run under it), then after a check, a batch and a cleanup were
// refused for a done context (ready: a caller giving up costs the store
// nothing), and after Close with a done context (closed, whatever the
// context).
func testReadinessFollowsContext(t *testing.T, f *fixture) {
	const g = "lifecycle: Ready follows its own context and is not spoilt by a caller's (ports.ReadinessChecker)"
	rc := f.readiness()
	var nilCtx context.Context
	err := f.guard(func() error { return rc.Ready(nilCtx) })
	f.log.add("Ready(nil ctx) → error: %v", err)
	f.requireNilContextRefused("Ready", err, g)
	done, cancel := context.WithCancel(f.ctx)
	cancel()
	err = f.guard(func() error { return rc.Ready(done) })
	f.log.add("Ready(done ctx) → error: %v", err)
	require.ErrorIs(t, err, context.Canceled, "%s: Ready with a done context must fail with the context's error", g)
	require.NotErrorIs(t, err, ports.ErrClosed, "%s: an open store's Ready with a done context is not closed", g)
	p := f.policy(2, window)
	k := f.key()
	_, err = f.applyWith(done, "done ctx", f.check(p, k), viaBatchOfOne)
	require.Error(t, err, "%s: a check with a done context", g)
	if _, ok := f.inst.Store.(ports.Cleaner); ok {
		_, err = f.cleanupWith(done, "done ctx", 1)
		require.Error(t, err, "%s: a cleanup with a done context", g)
	}
	require.NoError(t, f.ready(rc), "%s: calls refused for a caller's done context leave the store ready", g)
	f.allow(f.check(p, k), 1, g+" (and serving)")
	require.NoError(t, f.ready(rc), "%s: an admission leaves the store ready", g)
	c, ok := f.inst.Store.(ports.Closer)
	if !ok {
		return
	}
	f.closeStore(c, g)
	err = f.guard(func() error { return rc.Ready(done) })
	f.log.add("Ready(done ctx) after Close → error: %v", err)
	require.ErrorIs(t, err, ports.ErrClosed, "%s: Ready after Close fails with ports.ErrClosed whatever the context", g)
}

// lifecycleStats returns the store's ports.StatsReporter, and skips the
// case when it has none.
func (f *fixture) lifecycleStats() ports.StatsReporter {
	f.t.Helper()
	sr, ok := f.inst.Store.(ports.StatsReporter)
	if !ok {
		f.skip("lifecycle: the store does not implement ports.StatsReporter")
	}
	return sr
}
