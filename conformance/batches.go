package conformance

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// batchesScenario checks atomic batches: all or nothing, the first failure
// in caller order, allowances in caller order, and structural errors that
// never reach the store.
func batchesScenario() scenario {
	return scenario{name: "batches", cases: []testCase{
		{name: "all_or_nothing", single: true, run: testAllOrNothing},
		{name: "first_failing_index_in_caller_order", single: true, run: testFirstFailingIndex},
		{name: "caller_order_of_allowances", single: true, run: testCallerOrderOfAllowances},
		{name: "largest_batch_is_admitted", single: true, run: testLargestBatch},
		{name: "structural_errors_never_touch_the_store", single: true, run: testStructuralErrors},
		{name: "unprepared_batch_is_the_callers_mistake", run: testUnpreparedBatch},
		{name: "unready_batch_is_reported_before_a_nil_context", run: testBatchBeforeNilContext},
		{name: "repeated_batches_count_every_time", run: testRepeatedBatches},
		{name: "each_check_of_a_batch_counts_its_cost", run: testBatchCosts},
		{name: "one_subject_under_several_policies", run: testOneSubjectSeveralPolicies},
	}}
}

func testAllOrNothing(t *testing.T, f *fixture) {
	const g = "batches: a batch is all-or-nothing"
	p := f.policy(2, window)
	a, b, c := f.key(), f.key(), f.key()
	if f.parts > 1 {
		// The check before the denied one lands on another partition: a
		// store sharded over several backends rolls every backend back,
		// not only the denied check's.
		a = f.keyIn(p, f.otherPart(p, f.partOf(p, b)))
	}
	f.allow(f.check(p, b), 1, g)
	f.allow(f.check(p, b), 0, g)

	bd := f.admit([]domain.Check{f.check(p, a), f.check(p, b), f.check(p, c)}, g)
	require.Equal(t, domain.Denied, bd.Outcome(), "%s: a batch with an exhausted check is denied, got %s", g, describeBatch(bd))
	require.Nil(t, bd.Decisions(), "%s: a denied batch has no allowances", g)
	f.allow(f.check(p, a), 1, g+" (the check before the denied one consumed nothing)")
	f.allow(f.check(p, c), 1, g+" (the check after the denied one consumed nothing)")

	bd = f.admit([]domain.Check{f.check(p, a), f.check(p, c)}, g)
	require.Equal(t, domain.Allowed, bd.Outcome(), "%s: got %s", g, describeBatch(bd))
	f.deny(f.check(p, a), domain.QuotaExhausted, g+" (an allowed batch consumed every check)")
	f.deny(f.check(p, c), domain.QuotaExhausted, g+" (an allowed batch consumed every check)")
}

func testFirstFailingIndex(t *testing.T, f *fixture) {
	const g = "batches: a denied batch names its first failing check in caller order"
	p := f.policy(1, window)
	ks := f.keys(5)
	f.allow(f.check(p, ks[2]), 0, g)
	f.allow(f.check(p, ks[4]), 0, g)
	checks := make([]domain.Check, len(ks))
	for i, k := range ks {
		checks[i] = f.check(p, k)
	}
	for _, order := range []struct {
		name  string
		idx   []int
		first int
	}{
		{"caller order", []int{0, 1, 2, 3, 4}, 2},
		{"reversed", []int{4, 3, 2, 1, 0}, 0},
		{"exhausted last", []int{0, 1, 3, 4, 2}, 3},
	} {
		batch := make([]domain.Check, len(order.idx))
		for i, j := range order.idx {
			batch[i] = checks[j]
		}
		bd := f.admit(batch, g)
		i, den, ok := bd.Denied()
		require.True(t, ok, "%s (%s): got %s", g, order.name, describeBatch(bd))
		require.Equal(t, domain.Denied, bd.Outcome(), "%s (%s)", g, order.name)
		require.Equal(t, order.first, i, "%s (%s): got %s", g, order.name, describeBatch(bd))
		require.Equal(t, len(batch), bd.Size(), "%s (%s): the decision reports the batch size", g, order.name)
		require.Equal(t, domain.QuotaExhausted, den.Reason(), "%s (%s)", g, order.name)
		f.requireRetry(den, window, g+" ("+order.name+")")
	}
	f.allow(f.check(p, ks[0]), 0, g+" (the denied batches consumed nothing)")
}

func testCallerOrderOfAllowances(t *testing.T, f *fixture) {
	const g = "batches: allowances come back in caller order, each for its own counter"
	const limit = 20
	p := f.policy(limit, window)
	n := min(f.opts.MaxBatchSize, 6)
	ks := f.keys(n)
	// Present the keys in descending key order, the reverse of the order a
	// store locks them in, so that a store confusing lock order with caller
	// order is caught whatever keys the random draw gave.
	slices.SortFunc(ks, func(a, b domain.SubjectKey) int {
		return domain.NewCounterKey(p.Fingerprint(), b).Compare(domain.NewCounterKey(p.Fingerprint(), a))
	})
	// Give every counter a distinct count first: check i has used i+1 units.
	checks := make([]domain.Check, n)
	for i, k := range ks {
		f.allow(f.checkCost(p, k, int64(i+1)), limit-int64(i+1), g)
		checks[i] = f.check(p, k)
	}
	bd := f.admit(checks, g)
	require.Equal(t, domain.Allowed, bd.Outcome(), "%s: got %s", g, describeBatch(bd))
	ds := bd.Decisions()
	require.Len(t, ds, n, "%s: one decision per check", g)
	for i, d := range ds {
		a, ok := d.Allowance()
		require.True(t, ok, "%s: decision %d of an allowed batch must be allowed, got %s", g, i, describe(d))
		require.Equal(t, int64(limit-(i+1)-1), a.Remaining, "%s: decision %d reports another counter's count", g, i)
		f.requireDuration(window, a.ResetAfter, g)
	}
	for i, k := range ks {
		f.allow(f.checkCost(p, k, int64(limit-(i+1)-1)), 0, g+" (each counter was charged once)")
	}
}

func testLargestBatch(t *testing.T, f *fixture) {
	const g = "batches: a batch of MaxBatchSize distinct checks is admitted whole"
	p := f.policy(3, window)
	checks := make([]domain.Check, f.opts.MaxBatchSize)
	for i := range checks {
		checks[i] = f.check(p, f.key())
	}
	bd := f.admit(checks, g)
	require.Equal(t, domain.Allowed, bd.Outcome(), "%s: got %s", g, describeBatch(bd))
	require.Len(t, bd.Decisions(), len(checks), "%s: one decision per check", g)
	for _, c := range checks {
		f.allow(c, 1, g+" (every check was consumed)")
	}
}

func testStructuralErrors(t *testing.T, f *fixture) {
	const g = "batches: a structurally invalid batch is rejected before the store is touched"
	p := f.policy(2, window)
	sp := f.shadow(p)
	a, b := f.key(), f.key()
	oversized := make([]domain.Check, f.opts.MaxBatchSize+1)
	for i := range oversized {
		oversized[i] = f.check(p, f.key())
	}
	oversized[0] = f.check(p, a)
	for _, bad := range []struct {
		name    string
		checks  []domain.Check
		problem domain.BatchProblem
		index   int
		first   int
	}{
		{"empty", nil, domain.BatchEmpty, 0, 0},
		{"oversized", oversized, domain.BatchTooLarge, 0, 0},
		{"duplicate key", []domain.Check{f.check(p, a), f.check(p, b), f.checkCost(p, a, 2)}, domain.BatchDuplicateKey, 2, 0},
		{"mixed modes", []domain.Check{f.check(p, a), f.check(sp, b)}, domain.BatchMixedModes, 1, 0},
	} {
		_, err := f.limiter.CheckAll(f.ctx, bad.checks)
		require.ErrorIs(t, err, domain.ErrInvalidBatch, "%s (%s)", g, bad.name)
		var be *domain.BatchError
		require.True(t, errors.As(err, &be), "%s (%s): want a *domain.BatchError, got %T", g, bad.name, err)
		require.Equal(t, bad.problem, be.Problem, "%s (%s): %v", g, bad.name, err)
		if bad.problem == domain.BatchDuplicateKey || bad.problem == domain.BatchMixedModes {
			require.Equal(t, bad.index, be.Index, "%s (%s): the offending check", g, bad.name)
			require.Equal(t, bad.first, be.First, "%s (%s): the earlier check it conflicts with", g, bad.name)
		}
	}
	require.Zero(t, f.admits.Load(), "%s: the store saw an invalid batch", g)
	f.allow(f.check(p, a), 1, g+" (nothing was consumed)")
	f.allow(f.check(p, b), 1, g+" (nothing was consumed)")
}

// testRepeatedBatches sends one batch again and again without time
// moving: a store that remembers the last decision or the last read of a
// batch (a cache keyed by its keys and instant) answers the repeats from
// memory and stops counting.
func testRepeatedBatches(t *testing.T, f *fixture) {
	const g = "batches: the same batch sent again at the same instant is counted again"
	p := f.policy(3, window)
	a, b := f.key(), f.key()
	batch := []domain.Check{f.check(p, a), f.check(p, b)}
	for want := int64(2); want >= 0; want-- {
		rem := f.admitAllowed(batch, g)
		require.Equal(t, []int64{want, want}, rem, "%s: remaining units after the batch", g)
	}
	f.admitDenied(batch, 0, domain.QuotaExhausted, g+" (the fourth batch finds both counters exhausted)")
	f.admitDenied([]domain.Check{f.check(p, b), f.check(p, a)}, 0, domain.QuotaExhausted, g+" (in the other order too)")
}

// testOneSubjectSeveralPolicies sends the batch hosts send most: one
// subject under several policies (a per-minute burst limit and an hourly
// quota), so the batch's counter keys share their subject key and differ
// only in the fingerprint. A store that locks, reads or caches by subject
// key alone (an advisory lock id or a map taken from the subject) sees one
// key twice: it waits on its own lock, or serves one policy's counter for
// the other. The batches run as a watched race, so that a store that waits
// on itself fails the case as a deadlock instead of hanging the run.
func testOneSubjectSeveralPolicies(t *testing.T, f *fixture) {
	const g = "batches: a batch naming one subject under several policies counts each policy's counter on its own, " +
		"and takes each counter's lock once (a lock per subject key is taken twice by such a batch)"
	const burstLimit, hourLimit = 5, 10
	burst := f.policyOf("conformance.burst", "subject", burstLimit, time.Minute)
	hourly := f.policy(hourLimit, window)
	k, other := f.key(), f.key()
	// Distinct counts first: the hourly counter has used 4, the burst
	// counter nothing.
	f.allow(f.checkCost(hourly, k, 4), hourLimit-4, g)
	f.advance(time.Second)
	forward := []domain.Check{f.check(burst, k), f.check(hourly, k)}
	backward := []domain.Check{f.checkCost(hourly, k, 2), f.check(burst, k)}
	results := f.race(g, true, []worker{{name: "batches of one subject", watched: true, ops: []raceOp{
		// A check of another subject first, so that the store has read
		// its clock before the batches: a batch left waiting inside the
		// store is then a deadlock, not a store yet to start.
		f.checkOp(f.check(hourly, other), viaBatchOfOne),
		f.batchOp(forward),
		f.batchOp(backward),
	}}})
	f.logRace(fmt.Sprintf("%s, then %s, then %s, one after another", f.log.check(f.check(hourly, other)),
		f.log.batch(forward), f.log.batch(backward)), false, results)
	rs := results[0]
	require.Len(t, rs, 3, "%s: every operation finished", g)
	for i, want := range [][]int64{
		{hourLimit - 1},
		// Before it, the hourly counter had used 4 and the burst one nothing.
		{burstLimit - 1, hourLimit - 5},
		{hourLimit - 7, burstLimit - 2},
	} {
		r := rs[i]
		require.NoError(t, r.err, "%s: the store failed valid operation %d of 3", g, i+1)
		require.Equal(t, domain.Allowed, r.outcome, "%s: operation %d of 3 is within every limit, got %s (%s)", g, i+1, r.outcome, r.reason)
		require.Equal(t, want, r.remaining, "%s: operation %d of 3: each check reports its own policy's counter "+
			"(a store that reads by subject key alone serves one policy's counter for the other)", g, i+1)
	}

	f.advance(time.Minute)
	rem := f.admitAllowed([]domain.Check{f.check(burst, k), f.check(hourly, k)}, g+" (the burst window renews, the hourly one runs on)")
	require.Equal(t, []int64{burstLimit - 1, hourLimit - 8}, rem, "%s: the burst window renewed alone", g)
	f.admitDenied([]domain.Check{f.checkCost(burst, k, 2), f.checkCost(hourly, k, 3)}, 1, domain.QuotaExhausted,
		g+" (the hourly quota has 2 units left for a cost of 3)")
	f.allow(f.checkCost(burst, k, burstLimit-1), 0, g+" (the burst counter, on its own)")
	f.allow(f.checkCost(hourly, k, 2), 0, g+" (the hourly counter, on its own)")
}

// testUnpreparedBatch calls Admit directly, as a host driving a store
// without a limiter does, with a batch no [domain.NewBatch] or
// [domain.Batch.Reset] prepared (nil, or the zero Batch) and with one a
// store has already evaluated. Limiters never pass such a batch, so every
// other case would pass a store that panics on one. [domain.Batch.Ready]
// tells the store which is which before it does any work: an unprepared
// batch is the caller's mistake (domain.ErrInvalidInput), a driven one
// [domain.ErrBatchProtocol]; neither consumes (the last check shows it).
func testUnpreparedBatch(t *testing.T, f *fixture) {
	const g = "batches: Admit refuses a batch that was never prepared as the caller's mistake, and one already evaluated " +
		"as a protocol error, consuming nothing and never panicking"
	p, k := f.policy(2, window), f.key()
	driven, err := domain.NewBatch([]domain.Check{f.check(p, k)}, f.opts.MaxBatchSize)
	require.NoError(t, err, "harness: a batch of one")
	f.admitDirect(driven, "a batch of one", g)
	_, err = driven.Decision()
	require.NoError(t, err, "%s: Admit did not evaluate a valid batch of one", g)

	for _, bad := range []struct {
		name  string
		batch *domain.Batch
		want  error
	}{
		{"a nil batch", nil, domain.ErrInvalidInput},
		{"the zero Batch", new(domain.Batch), domain.ErrInvalidInput},
		{"the batch of one again, already evaluated", driven, domain.ErrBatchProtocol},
	} {
		err := f.admitDirect(bad.batch, bad.name, g)
		var pe *panicError
		require.False(t, errors.As(err, &pe), "%s (%s): the store panicked: %v", g, bad.name, err)
		require.ErrorIs(t, err, bad.want, "%s (%s): call Batch.Ready before any other work and return its error", g, bad.name)
	}
	f.allow(f.check(p, k), 0, g+" (only the batch of one was counted)")
}

// admitDirect calls the store's Admit with b, described in the operation
// log as name, and returns its error.
func (f *fixture) admitDirect(b *domain.Batch, name, guarantee string) error {
	f.t.Helper()
	f.admits.Add(1)
	f.rep.admits.Add(1)
	err := f.guard(func() error { return f.inst.Store.Admit(f.ctx, b) })
	f.log.add("Admit(%s) → error: %v", name, err)
	return err
}

// testBatchCosts sends a batch whose checks cost more than one unit each,
// on a new key, on an active window and on an ended one, and then spends
// what each counter has left: a batch script ported from a cost-one
// version (a counter created, or a window started again, at 1 rather than
// at the cost) reports the right allowances, computed by the domain, but
// stores less than it reported.
func testBatchCosts(t *testing.T, f *fixture) {
	const g = "batches: each check of a batch counts its own cost, on a new key, an active window and an ended one"
	const limit = 7
	p := f.policy(limit, window)
	short := f.policyOf("conformance.short", "subject", limit, time.Minute)
	fresh, active, ended := f.key(), f.key(), f.key()
	f.allow(f.check(p, active), limit-1, g)
	f.allow(f.checkCost(short, ended, 5), limit-5, g)
	f.advance(time.Minute)
	rem := f.admitAllowed([]domain.Check{
		f.checkCost(p, fresh, 3), f.checkCost(p, active, 2), f.checkCost(short, ended, 4),
	}, g)
	require.Equal(t, []int64{limit - 3, limit - 1 - 2, limit - 4}, rem, "%s: remaining units after the batch", g)
	for _, c := range []struct {
		name string
		p    domain.Policy
		k    domain.SubjectKey
		left int64
	}{
		{"the new key", p, fresh, limit - 3},
		{"the active window", p, active, limit - 3},
		{"the ended window started again", short, ended, limit - 4},
	} {
		f.allow(f.checkCost(c.p, c.k, c.left), 0, g+" ("+c.name+" has exactly what the batch reported left)")
		f.deny(f.check(c.p, c.k), domain.QuotaExhausted, g+" ("+c.name+" is then exhausted)")
	}
}
