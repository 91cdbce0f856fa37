package app_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// mapStore is a ports.Store over a map. It drives the batch protocol as real
// stores do, counts Admit calls, and can be told to fail or to skip
// evaluation.
type mapStore struct {
	mu       sync.Mutex
	now      domain.Instant
	counters map[domain.CounterKey]domain.Counter
	admits   int
	// err, when set, is returned before anything is observed.
	err error
	// skipEvaluate returns nil without evaluating: a broken store.
	skipEvaluate bool
}

var _ ports.Store = (*mapStore)(nil)

func newMapStore() *mapStore {
	return &mapStore{now: domain.Instant(1_000_000), counters: make(map[domain.CounterKey]domain.Counter)}
}

func (s *mapStore) Admit(ctx context.Context, b *domain.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admits++
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.err != nil {
		return s.err
	}
	if s.skipEvaluate {
		return nil
	}
	for i := range b.Len() {
		b.Observe(i, domain.Observation{Counter: s.counters[b.Key(i)]})
	}
	commit, err := b.Evaluate(s.now)
	if err != nil {
		return err
	}
	if commit {
		for i := range b.Len() {
			s.counters[b.Key(i)] = b.Next(i)
		}
	}
	return nil
}

func (s *mapStore) admitCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admits
}

func (s *mapStore) counter(k domain.CounterKey) domain.Counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counters[k]
}

// quotaError is a store error that knows whether it consumed quota.
type quotaError struct{ consumed bool }

func (e *quotaError) Error() string              { return fmt.Sprintf("store failed (consumed: %t)", e.consumed) }
func (e *quotaError) MayHaveConsumedQuota() bool { return e.consumed }

type fixture struct {
	store   *mapStore
	limiter *app.Limiter
	hasher  domain.KeyHasher
	// policy allows 3 units a minute.
	policy domain.Policy
}

func setup(t *testing.T) fixture {
	t.Helper()
	store := newMapStore()
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("app-test-secret-0123456789abcdef"))
	require.NoError(t, err)
	return fixture{store: store, limiter: limiter, hasher: hasher, policy: newPolicy(t, "auth.login", "identity", 3, time.Minute)}
}

func (f fixture) check(subject string) domain.Check {
	return domain.NewCheck(f.policy, f.hasher.KeyString(f.policy, subject))
}

func (f fixture) checks(n int) []domain.Check {
	checks := make([]domain.Check, n)
	for i := range checks {
		checks[i] = f.check(fmt.Sprintf("subject-%d", i))
	}
	return checks
}

func newPolicy(t *testing.T, id, scope string, limit int64, window time.Duration) domain.Policy {
	t.Helper()
	p, err := domain.ParsePolicy(id, scope, limit, window)
	require.NoError(t, err)
	return p
}

func TestNewLimiter(t *testing.T) {
	t.Parallel()

	_, err := app.NewLimiter(nil, app.LimiterConfig{})
	require.ErrorIs(t, err, app.ErrInvalidConfig)
	require.EqualError(t, err, "runlimit: invalid config: no store")

	_, err = app.NewLimiter(newMapStore(), app.LimiterConfig{MaxBatchSize: -1})
	require.ErrorIs(t, err, app.ErrInvalidConfig)
	require.EqualError(t, err, "runlimit: invalid config: max batch size -1 is negative")

	l, err := app.NewLimiter(newMapStore(), app.LimiterConfig{MaxBatchSize: 0})
	require.NoError(t, err)
	require.NotNil(t, l)
}

func TestLimiterMaxBatchSize(t *testing.T) {
	t.Parallel()

	cases := []struct {
		name     string
		config   int
		accepted int
	}{
		{"default", 0, domain.DefaultMaxBatchSize},
		{"configured", 2, 2},
		{"one", 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			l, err := app.NewLimiter(f.store, app.LimiterConfig{MaxBatchSize: tc.config})
			require.NoError(t, err)
			checks := f.checks(tc.accepted + 1)

			bd, err := l.CheckAll(t.Context(), checks[:tc.accepted])
			require.NoError(t, err)
			require.Equal(t, domain.Allowed, bd.Outcome())
			require.Equal(t, 1, f.store.admitCount())

			_, err = l.CheckAll(t.Context(), checks)
			var be *domain.BatchError
			require.ErrorAs(t, err, &be)
			require.Equal(t, domain.BatchError{Problem: domain.BatchTooLarge, Size: tc.accepted + 1, Max: tc.accepted}, *be)
			require.Equal(t, 1, f.store.admitCount(), "an oversized batch never reaches the store")
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.check("user@example.test")

	for remaining := int64(2); remaining >= 0; remaining-- {
		d, err := f.limiter.Check(t.Context(), c)
		require.NoError(t, err)
		require.Equal(t, domain.Allowed, d.Outcome())
		a, ok := d.Allowance()
		require.True(t, ok)
		require.Equal(t, domain.Allowance{Limit: 3, Remaining: remaining, ResetAfter: time.Minute}, a)
	}

	// Over the limit is a decision, not an error.
	d, err := f.limiter.Check(t.Context(), c)
	require.NoError(t, err)
	require.Equal(t, domain.Denied, d.Outcome())
	require.False(t, d.PermitsRequest())
	den, ok := d.Denial()
	require.True(t, ok)
	require.Equal(t, domain.QuotaExhausted, den.Reason())
	retry, ok := den.RetryAfter()
	require.True(t, ok)
	require.Equal(t, time.Minute, retry)
	require.Equal(t, int64(3), f.store.counter(c.CounterKey()).Used, "a denial consumes nothing")
	require.Equal(t, 4, f.store.admitCount())
}

func TestCheckReportsTheCheckError(t *testing.T) {
	t.Parallel()

	cases := map[string]struct {
		check   func(f fixture) domain.Check
		problem domain.CheckProblem
	}{
		"zero check": {func(fixture) domain.Check { return domain.Check{} }, domain.CheckZeroPolicy},
		"zero key":   {func(f fixture) domain.Check { return domain.NewCheck(f.policy, domain.SubjectKey{}) }, domain.CheckZeroKey},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			d, err := f.limiter.Check(t.Context(), tc.check(f))
			require.Equal(t, domain.Decision{}, d)
			var ce *domain.CheckError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.problem, ce.Problem)
			var be *domain.BatchError
			require.False(t, errors.As(err, &be), "a lone check reports its own error, not the batch's")
			require.NotErrorIs(t, err, domain.ErrInvalidBatch)
			require.ErrorIs(t, err, domain.ErrInvalidInput)
			require.False(t, ports.MayHaveConsumedQuota(err))
			require.Zero(t, f.store.admitCount(), "an invalid check never reaches the store")
		})
	}
}

func TestCheckAllValidatesBeforeTheStore(t *testing.T) {
	t.Parallel()
	f := setup(t)
	shadow, err := f.policy.WithMode(domain.Shadow)
	require.NoError(t, err)
	valid := f.checks(2)

	cases := []struct {
		name   string
		checks []domain.Check
		want   domain.BatchProblem
	}{
		{"empty", nil, domain.BatchEmpty},
		{"too large", f.checks(domain.DefaultMaxBatchSize + 1), domain.BatchTooLarge},
		{"invalid check", []domain.Check{valid[0], {}}, domain.BatchInvalidCheck},
		{"mixed modes", []domain.Check{valid[0], domain.NewCheck(shadow, f.hasher.KeyString(shadow, "x"))}, domain.BatchMixedModes},
		{"duplicate key", []domain.Check{valid[0], valid[1], valid[0]}, domain.BatchDuplicateKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := newMapStore()
			limiter, err := app.NewLimiter(store, app.LimiterConfig{})
			require.NoError(t, err)
			bd, err := limiter.CheckAll(t.Context(), tc.checks)
			require.Equal(t, domain.BatchDecision{}, bd)
			var be *domain.BatchError
			require.ErrorAs(t, err, &be)
			require.Equal(t, tc.want, be.Problem)
			require.ErrorIs(t, err, domain.ErrInvalidInput)
			require.False(t, ports.MayHaveConsumedQuota(err))
			require.Zero(t, store.admitCount(), "an invalid batch never reaches the store")
		})
	}
}

func TestStoreErrors(t *testing.T) {
	t.Parallel()

	unknown := errors.New("connection reset")
	cases := []struct {
		name     string
		err      error
		consumed bool
	}{
		{"not consumed", &quotaError{consumed: false}, false},
		{"may have consumed", &quotaError{consumed: true}, true},
		{"wrapped", fmt.Errorf("admit: %w", &quotaError{consumed: false}), false},
		{"unknown error", unknown, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.store.err = tc.err

			d, err := f.limiter.Check(t.Context(), f.check("s"))
			require.Equal(t, domain.Decision{}, d)
			require.Same(t, tc.err, err, "returned as is")
			require.Equal(t, tc.consumed, ports.MayHaveConsumedQuota(err))

			bd, err := f.limiter.CheckAll(t.Context(), f.checks(2))
			require.Equal(t, domain.BatchDecision{}, bd)
			require.Same(t, tc.err, err, "returned as is")
			require.Equal(t, tc.consumed, ports.MayHaveConsumedQuota(err))
			require.Equal(t, 2, f.store.admitCount())
		})
	}
}

func TestCancelledContextReachesTheStore(t *testing.T) {
	t.Parallel()
	f := setup(t)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := f.limiter.Check(ctx, f.check("s"))
	require.ErrorIs(t, err, context.Canceled)
	_, err = f.limiter.CheckAll(ctx, f.checks(2))
	require.ErrorIs(t, err, context.Canceled)
}

func TestStoreThatSkipsEvaluation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.store.skipEvaluate = true

	d, err := f.limiter.Check(t.Context(), f.check("s"))
	require.ErrorIs(t, err, domain.ErrBatchProtocol)
	require.Equal(t, domain.Decision{}, d)
	require.False(t, d.PermitsRequest(), "fails closed")

	bd, err := f.limiter.CheckAll(t.Context(), f.checks(2))
	require.ErrorIs(t, err, domain.ErrBatchProtocol)
	require.False(t, bd.PermitsRequest(), "fails closed")
	require.True(t, ports.MayHaveConsumedQuota(err), "a broken store is not trusted to have consumed nothing")
}

func TestStoreWithACorruptCounter(t *testing.T) {
	t.Parallel()
	f := setup(t)
	checks := f.checks(2)
	f.store.counters[checks[1].CounterKey()] = domain.Counter{Used: 99, Start: 0, Expires: 1}

	_, err := f.limiter.CheckAll(t.Context(), checks)
	var ce *domain.CorruptCounterError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 1, ce.Index)
	require.Equal(t, domain.Counter{}, f.store.counter(checks[0].CounterKey()), "nothing consumed")
}

func TestCheckAll(t *testing.T) {
	t.Parallel()
	f := setup(t)
	client := newPolicy(t, "auth.login", "client", 40, time.Minute)
	clientCheck := domain.NewCheck(client, f.hasher.KeyString(client, "192.0.2.4"))
	identity := f.check("user@example.test")
	checks := []domain.Check{clientCheck, identity}

	for i := range 3 {
		bd, err := f.limiter.CheckAll(t.Context(), checks)
		require.NoError(t, err)
		require.Equal(t, domain.Allowed, bd.Outcome())
		require.Equal(t, 2, bd.Size())
		ds := bd.Decisions()
		require.Len(t, ds, 2)
		a, _ := ds[0].Allowance()
		require.Equal(t, int64(39-i), a.Remaining, "caller order: the client first")
		a, _ = ds[1].Allowance()
		require.Equal(t, int64(2-i), a.Remaining)
	}

	// The identity is exhausted: the batch is denied at index 1 and the
	// client's counter is not consumed.
	bd, err := f.limiter.CheckAll(t.Context(), checks)
	require.NoError(t, err)
	require.Equal(t, domain.Denied, bd.Outcome())
	index, den, ok := bd.Denied()
	require.True(t, ok)
	require.Equal(t, 1, index)
	require.Equal(t, domain.QuotaExhausted, den.Reason())
	require.Nil(t, bd.Decisions())
	require.Equal(t, int64(3), f.store.counter(clientCheck.CounterKey()).Used)
}

func TestCheckAllDecisionsOutliveThePooledBatch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	other := newPolicy(t, "auth.login", "client", 1000, time.Minute)
	otherChecks := []domain.Check{
		domain.NewCheck(other, f.hasher.KeyString(other, "x")),
		domain.NewCheck(other, f.hasher.KeyString(other, "y")),
	}

	first, err := f.limiter.CheckAll(t.Context(), f.checks(2))
	require.NoError(t, err)
	snapshot := slices.Clone(first.Decisions())
	require.Len(t, snapshot, 2)

	// Later calls reuse pooled batches and produce different decisions.
	for range 8 {
		later, err := f.limiter.CheckAll(t.Context(), otherChecks)
		require.NoError(t, err)
		require.NotEqual(t, snapshot, later.Decisions())
	}
	require.Equal(t, snapshot, first.Decisions())
}

func TestLimiterConcurrentUse(t *testing.T) {
	t.Parallel()
	f := setup(t)
	policy := newPolicy(t, "auth.login", "burst", 50, time.Minute)
	shared := domain.NewCheck(policy, f.hasher.KeyString(policy, "shared"))

	const goroutines, perGoroutine = 8, 25
	type result struct {
		outcome domain.Outcome
		err     error
	}
	results := make(chan result, goroutines*perGoroutine)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			own := domain.NewCheck(policy, f.hasher.KeyString(policy, fmt.Sprintf("own-%d", g)))
			for i := range perGoroutine {
				if i%2 == 0 {
					d, err := f.limiter.Check(context.Background(), shared)
					results <- result{d.Outcome(), err}
					continue
				}
				bd, err := f.limiter.CheckAll(context.Background(), []domain.Check{own, shared})
				results <- result{bd.Outcome(), err}
			}
		})
	}
	wg.Wait()
	close(results)

	allowed := 0
	for r := range results {
		require.NoError(t, r.err)
		if r.outcome == domain.Allowed {
			allowed++
		}
	}
	require.Equal(t, 50, allowed, "exactly the limit is admitted on the shared key")
	require.Equal(t, int64(50), f.store.counter(shared.CounterKey()).Used)
}

// singleStore adds a single-check path to mapStore and counts its calls.
type singleStore struct {
	*mapStore
	singles int
}

var _ ports.CheckAdmitter = (*singleStore)(nil)

func (s *singleStore) AdmitCheck(ctx context.Context, c domain.Check) (domain.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.singles++
	k := c.CounterKey()
	o := domain.Observation{Counter: s.counters[k]}
	var next domain.Counter
	var d domain.Decision
	commit, err := domain.EvaluateCheck(&c, s.now, &o, &next, &d)
	if err != nil {
		return domain.Decision{}, err
	}
	if commit {
		s.counters[k] = next
	}
	return d, nil
}

func TestCheckTakesTheStoresSingleCheckPath(t *testing.T) {
	t.Parallel()

	f := setup(t)
	store := &singleStore{mapStore: f.store}
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	require.NoError(t, err)
	ctx := context.Background()

	c := f.check("user@example.test")
	d, err := limiter.Check(ctx, c)
	require.NoError(t, err)
	a, ok := d.Allowance()
	require.True(t, ok)
	require.Equal(t, int64(2), a.Remaining)
	require.Equal(t, 1, store.singles, "a single check must take AdmitCheck")
	require.Equal(t, 0, store.admitCount(), "a single check must not go through Admit")

	bd, err := limiter.CheckAll(ctx, []domain.Check{c})
	require.NoError(t, err)
	a, _ = bd.Decisions()[0].Allowance()
	require.Equal(t, int64(1), a.Remaining, "both paths share the counter")
	require.Equal(t, 1, store.admitCount(), "batches always go through Admit")

	// An invalid check is refused with the check's error before the store.
	_, err = limiter.Check(ctx, domain.Check{})
	var ce *domain.CheckError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, domain.CheckZeroPolicy, ce.Problem)
	require.Equal(t, 1, store.singles, "an invalid check never reaches AdmitCheck")
	require.Equal(t, int64(2), store.counter(c.CounterKey()).Used, "a refused check changes nothing")
}

// TestInvalidInputNeverReachesTheStore: whatever state the store and the
// context are in, a caller's mistake is reported as such, and the store,
// through either path, is never called.
func TestInvalidInputNeverReachesTheStore(t *testing.T) {
	t.Parallel()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var nilCtx context.Context
	for name, ctx := range map[string]context.Context{"live context": context.Background(), "done context": done} {
		for _, single := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, single-check path %t", name, single), func(t *testing.T) {
				t.Parallel()
				f := setup(t)
				f.store.err = errors.New("the store was reached")
				sstore := &singleStore{mapStore: f.store}
				var store ports.Store = f.store
				if single {
					store = sstore
				}
				limiter, err := app.NewLimiter(store, app.LimiterConfig{})
				require.NoError(t, err)
				valid := f.check("user@example.test")

				calls := map[string]func() error{
					"zero check": func() error { _, err := limiter.Check(ctx, domain.Check{}); return err },
					"zero key": func() error {
						_, err := limiter.Check(ctx, domain.NewCheck(f.policy, domain.SubjectKey{}))
						return err
					},
					"zero policy": func() error {
						_, err := limiter.Check(ctx, domain.NewCheck(domain.Policy{}, valid.SubjectKey()))
						return err
					},
					"nil context": func() error { _, err := limiter.Check(nilCtx, valid); return err },
					"empty batch": func() error { _, err := limiter.CheckAll(ctx, nil); return err },
					"batch with an invalid check": func() error {
						_, err := limiter.CheckAll(ctx, []domain.Check{valid, {}})
						return err
					},
					"batch with a nil context": func() error {
						_, err := limiter.CheckAll(nilCtx, []domain.Check{valid})
						return err
					},
				}
				for call, run := range calls {
					err := run()
					require.ErrorIs(t, err, domain.ErrInvalidInput, call)
					require.False(t, ports.MayHaveConsumedQuota(err), call)
				}
				require.ErrorIs(t, calls["nil context"](), ports.ErrNilContext)
				require.Zero(t, f.store.admitCount(), "Admit was called")
				require.Zero(t, sstore.singles, "AdmitCheck was called")
			})
		}
	}
}

// TestNewLimiterRejectsANilPointerStore: a nil pointer in the interface is
// no store either; it would panic on the first check.
func TestNewLimiterRejectsANilPointerStore(t *testing.T) {
	t.Parallel()
	var store *mapStore
	_, err := app.NewLimiter(store, app.LimiterConfig{})
	require.ErrorIs(t, err, app.ErrInvalidConfig)
	require.EqualError(t, err, "runlimit: invalid config: no store")
}
