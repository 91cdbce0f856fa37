package conformance

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// window is the suite's usual window: long enough that a database clock
// that keeps running never ends a window by itself while a case runs, so
// only Advance does.
const window = time.Hour

// fixture is one case's fresh store, the limiter over it and the helpers
// that turn a broken guarantee into a message naming it.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	opts    Options
	inst    Instance
	counted *countingStore
	limiter *app.Limiter
	parts   int
}

func setup(t *testing.T, newStore NewStoreFunc, opts Options) *fixture {
	t.Helper()
	inst := newStore(t, opts)
	require.NotNil(t, inst.Store, "harness: NewStoreFunc returned an Instance without a Store")
	require.NotNil(t, inst.Advance, "harness: NewStoreFunc returned an Instance without an Advance func")
	require.GreaterOrEqual(t, inst.Partitions, 0, "harness: Instance.Partitions is negative")
	counted := &countingStore{inner: inst.Store}
	// The real path: every check goes through app.Limiter, the limiter
	// hosts use, so the suite proves the store in the only way it will be
	// driven.
	require.GreaterOrEqual(t, opts.MaxBatchSize, 0, "harness: Options.MaxBatchSize is negative")
	maxBatch := opts.MaxBatchSize
	if maxBatch == 0 {
		maxBatch = domain.DefaultMaxBatchSize
	}
	limiter, err := app.NewLimiter(counted, app.LimiterConfig{MaxBatchSize: maxBatch})
	require.NoError(t, err, "harness: app.NewLimiter")
	f := &fixture{t: t, ctx: t.Context(), opts: opts, inst: inst, counted: counted, limiter: limiter, parts: 1}
	if s, ok := f.stats(); ok && s.Shards > 0 {
		f.parts = s.Shards
	} else if inst.Partitions > 0 {
		f.parts = inst.Partitions
	}
	return f
}

// policy returns an enforce-mode policy with the suite's usual identifiers.
func (f *fixture) policy(limit int64, w time.Duration) domain.Policy {
	return f.policyOf("conformance.check", "subject", limit, w)
}

func (f *fixture) policyOf(id, scope string, limit int64, w time.Duration) domain.Policy {
	f.t.Helper()
	pid, err := domain.NewPolicyID(id)
	require.NoError(f.t, err)
	sid, err := domain.NewScopeID(scope)
	require.NoError(f.t, err)
	p, err := domain.NewPolicy(pid, sid, limit, w)
	require.NoError(f.t, err)
	return p
}

// shadow returns p in shadow mode: the same fingerprint, so the same
// counters.
func (f *fixture) shadow(p domain.Policy) domain.Policy {
	f.t.Helper()
	s, err := p.WithMode(domain.Shadow)
	require.NoError(f.t, err)
	return s
}

// key returns a random subject key, so that no two cases (nor two runs on a
// shared database) ever meet on a counter.
func (f *fixture) key() domain.SubjectKey {
	var b [32]byte
	// crypto/rand.Read never returns an error; it crashes the program when
	// the system's generator fails.
	_, _ = rand.Read(b[:])
	return domain.SubjectKeyFromBytes(b)
}

func (f *fixture) keys(n int) []domain.SubjectKey {
	ks := make([]domain.SubjectKey, n)
	for i := range ks {
		ks[i] = f.key()
	}
	return ks
}

func (f *fixture) check(p domain.Policy, k domain.SubjectKey) domain.Check {
	return domain.NewCheck(p, k)
}

func (f *fixture) checkCost(p domain.Policy, k domain.SubjectKey, cost int64) domain.Check {
	f.t.Helper()
	c, err := domain.NewCheckCost(p, k, cost)
	require.NoError(f.t, err)
	return c
}

// decide applies one check; a store error fails the case under guarantee.
func (f *fixture) decide(c domain.Check, guarantee string) domain.Decision {
	f.t.Helper()
	d, err := f.limiter.Check(f.ctx, c)
	require.NoError(f.t, err, "%s: the store failed a valid check", guarantee)
	return d
}

// allow applies one check that must be allowed with remaining units left.
func (f *fixture) allow(c domain.Check, remaining int64, guarantee string) domain.Allowance {
	f.t.Helper()
	d := f.decide(c, guarantee)
	a, ok := d.Allowance()
	require.True(f.t, ok, "%s: want allowed with %d remaining, got %s", guarantee, remaining, describe(d))
	require.Equal(f.t, c.Policy().Limit(), a.Limit, "%s: the allowance must carry the policy's limit", guarantee)
	require.Equal(f.t, remaining, a.Remaining, "%s: remaining units after the check", guarantee)
	return a
}

// deny applies one check that must be denied (not shadow-denied) for
// reason.
func (f *fixture) deny(c domain.Check, reason domain.DenialReason, guarantee string) domain.Denial {
	f.t.Helper()
	return f.refuse(c, domain.Denied, reason, guarantee)
}

// refuse applies one check that must end with outcome (denied or
// shadow-denied) for reason.
func (f *fixture) refuse(c domain.Check, outcome domain.Outcome, reason domain.DenialReason, guarantee string) domain.Denial {
	f.t.Helper()
	d := f.decide(c, guarantee)
	den, _ := d.Denial()
	// Compare names, so a failure prints "denied (quota)" rather than the
	// enums' numbers.
	require.Equal(f.t, outcome.String()+" ("+reason.String()+")", d.Outcome().String()+" ("+den.Reason().String()+")",
		"%s: got %s", guarantee, describe(d))
	return den
}

// admit applies checks as one batch; a store error fails the case.
func (f *fixture) admit(checks []domain.Check, guarantee string) domain.BatchDecision {
	f.t.Helper()
	bd, err := f.limiter.CheckAll(f.ctx, checks)
	require.NoError(f.t, err, "%s: the store failed a valid batch", guarantee)
	return bd
}

func (f *fixture) advance(d time.Duration) {
	f.t.Helper()
	f.inst.Advance(f.t, d)
}

// requireDuration checks a reset or retry time against want, the value a
// clock that moves only through Advance gives. A clock that keeps running
// can only have shortened it since: it must still be positive and at most
// want.
func (f *fixture) requireDuration(want, got time.Duration, guarantee string) {
	f.t.Helper()
	if f.inst.ExactTime {
		require.Equal(f.t, want, got, "%s: the store's clock moves only through Advance, so the time is exact", guarantee)
		return
	}
	require.Positive(f.t, got, "%s: the window is still active, so the time left must be positive", guarantee)
	require.LessOrEqual(f.t, got, want, "%s: time passed since, so the time left cannot exceed %v", guarantee, want)
}

// requireRetry checks that a denial carries a retry time and checks it as
// requireDuration does.
func (f *fixture) requireRetry(d domain.Denial, want time.Duration, guarantee string) {
	f.t.Helper()
	retry, ok := d.RetryAfter()
	require.True(f.t, ok, "%s: a quota denial must say when to retry", guarantee)
	f.requireDuration(want, retry, guarantee)
}

// stats returns the store's occupancy when it reports one.
func (f *fixture) stats() (ports.Stats, bool) {
	f.t.Helper()
	sr, ok := f.inst.Store.(ports.StatsReporter)
	if !ok {
		return ports.Stats{}, false
	}
	s, err := sr.Stats(f.ctx)
	require.NoError(f.t, err, "stats: Stats failed")
	return s, true
}

// filled is what fill left: the keys the store admitted and the first key
// it refused for storage capacity, if any.
type filled struct {
	admitted []domain.SubjectKey
	full     bool
	refused  domain.SubjectKey
	outcome  domain.Outcome
	denial   domain.Denial
}

// fill admits new keys under p, one check each, until the store refuses one
// for storage capacity or it has admitted more keys than all its partitions
// can hold. The keys are random, so on a store with several partitions the
// first partition to fill is found by adding keys rather than aimed at.
func (f *fixture) fill(p domain.Policy) filled {
	f.t.Helper()
	var r filled
	for range f.parts*f.opts.Capacity + 1 {
		k := f.key()
		d := f.decide(f.check(p, k), "capacity: admitting a new key")
		if d.Outcome() == domain.Allowed {
			r.admitted = append(r.admitted, k)
			continue
		}
		den, _ := d.Denial()
		require.Equal(f.t, domain.StorageCapacity, den.Reason(),
			"capacity: a new key can only be refused for storage capacity, got %s", describe(d))
		r.full, r.refused, r.outcome, r.denial = true, k, d.Outcome(), den
		return r
	}
	return r
}

// requireFull checks that fill ended with a storage-capacity denial, after
// exactly Capacity keys on a single-partition store.
func (f *fixture) requireFull(r filled) {
	f.t.Helper()
	require.True(f.t, r.full,
		"capacity: the store admitted %d new keys with %d partition(s) of capacity %d; "+
			"a new key in a full partition must be denied for storage capacity",
		len(r.admitted), f.parts, f.opts.Capacity)
	require.GreaterOrEqual(f.t, len(r.admitted), f.opts.Capacity,
		"capacity: a partition must hold Capacity counters before it refuses a new key")
	if f.parts == 1 {
		require.Len(f.t, r.admitted, f.opts.Capacity,
			"capacity: a single-partition store holds exactly Capacity counters")
	}
}

// describe prints a decision for a failure message. Decisions never hold
// key bytes.
func describe(d domain.Decision) string {
	if a, ok := d.Allowance(); ok {
		return fmt.Sprintf("allowed (limit %d, remaining %d, reset after %v)", a.Limit, a.Remaining, a.ResetAfter)
	}
	den, ok := d.Denial()
	if !ok {
		return "no decision"
	}
	retry, has := den.RetryAfter()
	if !has {
		return fmt.Sprintf("%s (%s, no retry time)", d.Outcome(), den.Reason())
	}
	return fmt.Sprintf("%s (%s, retry after %v)", d.Outcome(), den.Reason(), retry)
}

// describeBatch prints a batch decision for a failure message.
func describeBatch(bd domain.BatchDecision) string {
	if i, _, ok := bd.Denied(); ok {
		d, _ := bd.Decision(i)
		return fmt.Sprintf("%s at check %d of %d: %s", bd.Outcome(), i, bd.Size(), describe(d))
	}
	return fmt.Sprintf("%s, %d decisions", bd.Outcome(), len(bd.Decisions()))
}
