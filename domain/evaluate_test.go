package domain_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// observeAndEvaluate drives b as a store does: one observation per check,
// then evaluation at now.
func observeAndEvaluate(t testing.TB, b *domain.Batch, now domain.Instant, obs ...domain.Observation) (bool, error) {
	t.Helper()
	require.Len(t, obs, b.Len(), "one observation per check")
	for i, o := range obs {
		b.Observe(i, o)
	}
	return b.Evaluate(now)
}

// evaluateOne runs a one-check batch and returns whether it commits, the
// check's decision and the state a committing store persists.
func evaluateOne(t testing.TB, c domain.Check, now domain.Instant, o domain.Observation) (bool, domain.Decision, domain.Counter) {
	t.Helper()
	b := newBatch(t, c)
	commit, err := observeAndEvaluate(t, b, now, o)
	require.NoError(t, err)
	bd, err := b.Decision()
	require.NoError(t, err)
	require.Equal(t, 1, bd.Size())
	d, ok := bd.Decision(0)
	require.True(t, ok)
	require.Equal(t, bd.Outcome(), d.Outcome())
	require.Equal(t, commit, d.Outcome() == domain.Allowed, "a batch commits exactly when it is allowed")
	return commit, d, b.Next(0)
}

func requireAllowed(t testing.TB, d domain.Decision, limit, remaining int64, resetAfter time.Duration) {
	t.Helper()
	require.Equal(t, domain.Allowed, d.Outcome())
	require.True(t, d.PermitsRequest())
	a, ok := d.Allowance()
	require.True(t, ok)
	require.Equal(t, domain.Allowance{Limit: limit, Remaining: remaining, ResetAfter: resetAfter}, a)
	_, ok = d.Denial()
	require.False(t, ok)
}

func requireDenied(t testing.TB, d domain.Decision, outcome domain.Outcome, reason domain.DenialReason, retry time.Duration, hasRetry bool) {
	t.Helper()
	require.Equal(t, outcome, d.Outcome())
	require.Equal(t, outcome == domain.ShadowDenied, d.PermitsRequest())
	den, ok := d.Denial()
	require.True(t, ok)
	require.Equal(t, reason, den.Reason())
	got, has := den.RetryAfter()
	require.Equal(t, hasRetry, has)
	require.Equal(t, retry, got)
	_, ok = d.Allowance()
	require.False(t, ok)
}

func TestEvaluateSequence(t *testing.T) {
	t.Parallel()
	f := setup(t) // 5 per second
	key := f.key("user@example.test")

	type step struct {
		now       domain.Instant
		cost      int64
		allowed   bool
		remaining int64
		wait      time.Duration // reset-after when allowed, retry-after when denied
		stored    domain.Counter
	}
	steps := []step{
		{now: ms(1000), cost: 1, allowed: true, remaining: 4, wait: time.Second, stored: domain.Counter{Used: 1, Start: ms(1000), Expires: ms(2000)}},
		{now: ms(1250), cost: 2, allowed: true, remaining: 2, wait: 750 * time.Millisecond, stored: domain.Counter{Used: 3, Start: ms(1000), Expires: ms(2000)}},
		{now: ms(1500), cost: 3, allowed: false, wait: 500 * time.Millisecond, stored: domain.Counter{Used: 3, Start: ms(1000), Expires: ms(2000)}},
		{now: ms(1500), cost: 2, allowed: true, remaining: 0, wait: 500 * time.Millisecond, stored: domain.Counter{Used: 5, Start: ms(1000), Expires: ms(2000)}},
		{now: ms(2000) - 1, cost: 1, allowed: false, wait: time.Microsecond, stored: domain.Counter{Used: 5, Start: ms(1000), Expires: ms(2000)}},
		// Exactly at expiry the window has ended: re-anchored at now.
		{now: ms(2000), cost: 5, allowed: true, remaining: 0, wait: time.Second, stored: domain.Counter{Used: 5, Start: ms(2000), Expires: ms(3000)}},
		// Long after expiry: re-anchored at now, not at a multiple of the window.
		{now: ms(9_999_123), cost: 1, allowed: true, remaining: 4, wait: time.Second, stored: domain.Counter{Used: 1, Start: ms(9_999_123), Expires: ms(10_000_123)}},
	}

	var stored domain.Counter // absent
	for i, s := range steps {
		c, err := domain.NewCheckCost(f.policy, key, s.cost)
		require.NoError(t, err)
		commit, d, next := evaluateOne(t, c, s.now, domain.Observation{Counter: stored})
		if s.allowed {
			require.True(t, commit, "step %d", i)
			requireAllowed(t, d, 5, s.remaining, s.wait)
			stored = next
		} else {
			require.False(t, commit, "step %d", i)
			requireDenied(t, d, domain.Denied, domain.QuotaExhausted, s.wait, true)
		}
		require.Equal(t, s.stored, stored, "step %d", i)
	}
}

func TestEvaluateWindowBoundary(t *testing.T) {
	t.Parallel()
	f := setup(t)
	full := domain.Counter{Used: 5, Start: ms(1000), Expires: ms(2000)}

	cases := []struct {
		name string
		now  domain.Instant
		// allowed means renewed at now; otherwise denied until Expires.
		allowed bool
	}{
		{"at the start", ms(1000), false},
		{"one microsecond before expiry is active", ms(2000) - 1, false},
		{"at expiry has expired", ms(2000), true},
		{"one microsecond after expiry", ms(2000) + 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			commit, d, next := evaluateOne(t, f.check("s"), tc.now, domain.Observation{Counter: full})
			require.Equal(t, tc.allowed, commit)
			if tc.allowed {
				requireAllowed(t, d, 5, 4, time.Second)
				require.Equal(t, domain.Counter{Used: 1, Start: tc.now, Expires: tc.now.Add(time.Second)}, next)
				return
			}
			requireDenied(t, d, domain.Denied, domain.QuotaExhausted, full.Expires.Sub(tc.now), true)
		})
	}
}

func TestEvaluateStorageCapacity(t *testing.T) {
	t.Parallel()
	f := setup(t)
	now := ms(5000)
	active := domain.Counter{Used: 2, Start: ms(4500), Expires: ms(5500)}
	expired := domain.Counter{Used: 5, Start: ms(1000), Expires: ms(2000)}

	cases := []struct {
		name     string
		mode     domain.Mode
		obs      domain.Observation
		allowed  bool
		retry    time.Duration
		hasRetry bool
	}{
		{name: "absent and full, no retry time", obs: domain.Observation{Full: true}},
		{name: "absent and full, retry at the earliest expiry", obs: domain.Observation{Full: true, EarliestExpiry: ms(5250), HasEarliestExpiry: true}, retry: 250 * time.Millisecond, hasRetry: true},
		{name: "earliest expiry now gives zero", obs: domain.Observation{Full: true, EarliestExpiry: now, HasEarliestExpiry: true}, retry: 0, hasRetry: true},
		{name: "earliest expiry in the past is never negative", obs: domain.Observation{Full: true, EarliestExpiry: ms(10), HasEarliestExpiry: true}, retry: 0, hasRetry: true},
		{name: "earliest expiry far ahead", obs: domain.Observation{Full: true, EarliestExpiry: now.Add(domain.MaxWindow), HasEarliestExpiry: true}, retry: domain.MaxWindow, hasRetry: true},
		{name: "earliest expiry unset is ignored", obs: domain.Observation{Full: true, EarliestExpiry: ms(9000)}},
		{name: "capacity is never shadowed", mode: domain.Shadow, obs: domain.Observation{Full: true}},
		{name: "shadow capacity keeps its retry", mode: domain.Shadow, obs: domain.Observation{Full: true, EarliestExpiry: ms(6000), HasEarliestExpiry: true}, retry: time.Second, hasRetry: true},
		{name: "an active key ignores Full", obs: domain.Observation{Counter: active, Full: true}, allowed: true},
		{name: "an expired key renews in place despite Full", obs: domain.Observation{Counter: expired, Full: true, HasEarliestExpiry: true, EarliestExpiry: ms(9000)}, allowed: true},
		{name: "absent and not full", obs: domain.Observation{EarliestExpiry: ms(9000), HasEarliestExpiry: true}, allowed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := domain.NewCheck(withMode(t, f.policy, tc.mode), f.key("s"))
			commit, d, next := evaluateOne(t, c, now, tc.obs)
			require.Equal(t, tc.allowed, commit)
			if !tc.allowed {
				requireDenied(t, d, domain.Denied, domain.StorageCapacity, tc.retry, tc.hasRetry)
				return
			}
			if tc.obs.Counter.Active(now) {
				require.Equal(t, domain.Counter{Used: 3, Start: active.Start, Expires: active.Expires}, next)
				requireAllowed(t, d, 5, 2, 500*time.Millisecond)
				return
			}
			require.Equal(t, domain.Counter{Used: 1, Start: now, Expires: now.Add(time.Second)}, next)
			requireAllowed(t, d, 5, 4, time.Second)
		})
	}
}

func TestEvaluateShadowMode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	shadow := withMode(t, f.policy, domain.Shadow)
	used := domain.Counter{Used: 4, Start: ms(0), Expires: ms(1000)}

	c, err := domain.NewCheckCost(shadow, f.key("s"), 2)
	require.NoError(t, err)
	commit, d, _ := evaluateOne(t, c, ms(400), domain.Observation{Counter: used})
	require.False(t, commit, "a shadow denial consumes nothing")
	requireDenied(t, d, domain.ShadowDenied, domain.QuotaExhausted, 600*time.Millisecond, true)
	require.True(t, d.PermitsRequest())

	// Within quota, shadow mode consumes like enforce mode.
	commit, d, next := evaluateOne(t, domain.NewCheck(shadow, f.key("s")), ms(400), domain.Observation{Counter: used})
	require.True(t, commit)
	requireAllowed(t, d, 5, 0, 600*time.Millisecond)
	require.Equal(t, domain.Counter{Used: 5, Start: ms(0), Expires: ms(1000)}, next)
}

func TestEvaluateBatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	client := newPolicy(t, "auth.login", "client", 40, time.Minute)
	global := newPolicy(t, "auth.login", "global", 1000, time.Hour)
	now := ms(30_000)
	corrupt := domain.Counter{Used: -1}

	t.Run("allowed decisions keep caller order", func(t *testing.T) {
		t.Parallel()
		b := newBatch(t,
			domain.NewCheck(client, f.key("c")),
			f.check("s"),
			domain.NewCheck(global, f.key("g")),
		)
		obs := []domain.Observation{
			{Counter: domain.Counter{Used: 10, Start: ms(0), Expires: ms(60_000)}},
			{},
			{Counter: domain.Counter{Used: 999, Start: ms(0), Expires: ms(3_600_000)}, Full: true},
		}
		commit, err := observeAndEvaluate(t, b, now, obs...)
		require.NoError(t, err)
		require.True(t, commit)
		bd, err := b.Decision()
		require.NoError(t, err)
		require.Equal(t, domain.Allowed, bd.Outcome())
		require.True(t, bd.PermitsRequest())
		require.Equal(t, 3, bd.Size())
		_, _, denied := bd.Denied()
		require.False(t, denied)
		require.Len(t, bd.Decisions(), 3)
		requireAllowed(t, bd.Decisions()[0], 40, 29, 30*time.Second)
		requireAllowed(t, bd.Decisions()[1], 5, 4, time.Second)
		requireAllowed(t, bd.Decisions()[2], 1000, 0, time.Hour-30*time.Second)
		for i, want := range bd.Decisions() {
			got, ok := bd.Decision(i)
			require.True(t, ok)
			require.Equal(t, want, got)
		}
		require.Equal(t, domain.Counter{Used: 11, Start: ms(0), Expires: ms(60_000)}, b.Next(0))
		require.Equal(t, domain.Counter{Used: 1, Start: now, Expires: ms(31_000)}, b.Next(1))
		require.Equal(t, domain.Counter{Used: 1000, Start: ms(0), Expires: ms(3_600_000)}, b.Next(2))
	})

	t.Run("the first failure in caller order is reported and later checks are not evaluated", func(t *testing.T) {
		t.Parallel()
		b := newBatch(t,
			f.check("s"),
			domain.NewCheck(client, f.key("c")),
			domain.NewCheck(global, f.key("g")),
			f.check("t"),
		)
		obs := []domain.Observation{
			{},
			{Counter: domain.Counter{Used: 40, Start: ms(0), Expires: ms(60_000)}}, // exhausted
			{Full: true},       // would be a capacity denial
			{Counter: corrupt}, // would be an error
		}
		commit, err := observeAndEvaluate(t, b, now, obs...)
		require.NoError(t, err)
		require.False(t, commit)
		bd, err := b.Decision()
		require.NoError(t, err)
		require.Equal(t, domain.Denied, bd.Outcome())
		require.False(t, bd.PermitsRequest())
		require.Equal(t, 4, bd.Size())
		require.Nil(t, bd.Decisions())
		index, denial, ok := bd.Denied()
		require.True(t, ok)
		require.Equal(t, 1, index)
		require.Equal(t, domain.QuotaExhausted, denial.Reason())
		retry, ok := denial.RetryAfter()
		require.True(t, ok)
		require.Equal(t, 30*time.Second, retry)

		d, ok := bd.Decision(1)
		require.True(t, ok)
		requireDenied(t, d, domain.Denied, domain.QuotaExhausted, 30*time.Second, true)
		for _, i := range []int{-1, 0, 2, 3, 4} {
			_, ok := bd.Decision(i)
			require.False(t, ok, "check %d has no decision in a denied batch", i)
		}
	})

	t.Run("a corrupt counter before a denial is an error", func(t *testing.T) {
		t.Parallel()
		b := newBatch(t, f.check("s"), domain.NewCheck(client, f.key("c")))
		obs := []domain.Observation{
			{Counter: corrupt},
			{Counter: domain.Counter{Used: 40, Start: ms(0), Expires: ms(60_000)}},
		}
		commit, err := observeAndEvaluate(t, b, now, obs...)
		require.False(t, commit)
		var ce *domain.CorruptCounterError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, 0, ce.Index)
	})

	t.Run("a shadow batch reports the first shadow denial", func(t *testing.T) {
		t.Parallel()
		shadowClient := withMode(t, client, domain.Shadow)
		shadowSelf := withMode(t, f.policy, domain.Shadow)
		b := newBatch(t, domain.NewCheck(shadowSelf, f.key("s")), domain.NewCheck(shadowClient, f.key("c")))
		obs := []domain.Observation{
			{},
			{Counter: domain.Counter{Used: 40, Start: ms(0), Expires: ms(60_000)}},
		}
		commit, err := observeAndEvaluate(t, b, now, obs...)
		require.NoError(t, err)
		require.False(t, commit, "nothing is consumed, not even the allowed check")
		bd, err := b.Decision()
		require.NoError(t, err)
		require.Equal(t, domain.ShadowDenied, bd.Outcome())
		require.True(t, bd.PermitsRequest())
		index, _, ok := bd.Denied()
		require.True(t, ok)
		require.Equal(t, 1, index)
	})
}

func TestEvaluateCorruptCounters(t *testing.T) {
	t.Parallel()
	f := setup(t) // limit 5, window 1s
	now := ms(10_000)

	corrupt := []struct {
		name    string
		counter domain.Counter
	}{
		{"used over the limit", domain.Counter{Used: 6, Start: ms(9_500), Expires: ms(10_500)}},
		{"used over the limit and expired", domain.Counter{Used: 6, Start: ms(0), Expires: ms(1000)}},
		{"negative used", domain.Counter{Used: -1, Start: ms(9_500), Expires: ms(10_500)}},
		{"negative used without times", domain.Counter{Used: math.MinInt64}},
		{"start equal to expiry", domain.Counter{Used: 1, Start: ms(10_500), Expires: ms(10_500)}},
		{"start after expiry", domain.Counter{Used: 1, Start: ms(10_600), Expires: ms(10_500)}},
		{"window longer than the policy", domain.Counter{Used: 1, Start: ms(9_500), Expires: ms(10_500) + 1}},
		{"window longer than any duration", domain.Counter{Used: 1, Start: math.MinInt64, Expires: math.MaxInt64}},
		{"used 0 with a start", domain.Counter{Start: ms(9_500)}},
		{"used 0 with an expiry", domain.Counter{Expires: ms(10_500)}},
		{"used 0 with both times", domain.Counter{Start: ms(9_500), Expires: ms(10_500)}},
	}
	for _, tc := range corrupt {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBatch(t, f.check("a"), f.check("b"))
			commit, err := observeAndEvaluate(t, b, now, domain.Observation{}, domain.Observation{Counter: tc.counter})
			require.False(t, commit)
			require.ErrorIs(t, err, domain.ErrCorruptCounter)
			require.NotErrorIs(t, err, domain.ErrInvalidInput)
			var ce *domain.CorruptCounterError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, 1, ce.Index)
			require.EqualError(t, err, "runlimit: stored counter of check 1 is corrupt")
			_, err = b.Decision()
			require.ErrorIs(t, err, domain.ErrBatchProtocol, "a failed evaluation has no decision")
		})
	}

	valid := []struct {
		name    string
		counter domain.Counter
	}{
		{"used equal to the limit", domain.Counter{Used: 5, Start: ms(9_500), Expires: ms(10_500)}},
		{"window exactly the policy's", domain.Counter{Used: 1, Start: ms(9_500), Expires: ms(10_500)}},
		{"window shorter than the policy's", domain.Counter{Used: 1, Start: ms(9_500), Expires: ms(9_500) + 1}},
		{"negative instants", domain.Counter{Used: 1, Start: -ms(1000), Expires: 0}},
	}
	for _, tc := range valid {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBatch(t, f.check("a"))
			_, err := observeAndEvaluate(t, b, now, domain.Observation{Counter: tc.counter})
			require.NoError(t, err)
		})
	}
}

func TestEvaluateClockBehindWindowStart(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// Another replica anchored the window at 1000 ms; this store's clock
	// reads 400 ms. The window never appears longer than the policy's.
	stored := domain.Counter{Used: 4, Start: ms(1000), Expires: ms(2000)}

	commit, d, next := evaluateOne(t, f.check("s"), ms(400), domain.Observation{Counter: stored})
	require.True(t, commit)
	requireAllowed(t, d, 5, 0, time.Second)
	require.Equal(t, domain.Counter{Used: 5, Start: ms(1000), Expires: ms(2000)}, next, "the anchor is kept")

	exhausted := domain.Counter{Used: 5, Start: ms(1000), Expires: ms(2000)}
	commit, d, _ = evaluateOne(t, f.check("s"), math.MinInt64, domain.Observation{Counter: exhausted})
	require.False(t, commit)
	requireDenied(t, d, domain.Denied, domain.QuotaExhausted, time.Second, true)
}

func TestEvaluateExtremePolicies(t *testing.T) {
	t.Parallel()
	f := setup(t)
	huge := newPolicy(t, "auth.login", "huge", domain.MaxLimit, domain.MaxWindow)
	key := f.hasher.KeyString(huge, "s")
	// A realistic PostgreSQL clock: microseconds since the Unix epoch.
	now := domain.InstantFromTime(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))

	commit, d, stored := evaluateOne(t, domain.NewCheck(huge, key), now, domain.Observation{})
	require.True(t, commit)
	requireAllowed(t, d, domain.MaxLimit, domain.MaxLimit-1, domain.MaxWindow)
	require.Equal(t, domain.Counter{Used: 1, Start: now, Expires: now + domain.Instant(domain.MaxWindow/time.Microsecond)}, stored)

	rest, err := domain.NewCheckCost(huge, key, domain.MaxLimit-1)
	require.NoError(t, err)
	later := now.Add(time.Hour)
	commit, d, stored = evaluateOne(t, rest, later, domain.Observation{Counter: stored})
	require.True(t, commit)
	requireAllowed(t, d, domain.MaxLimit, 0, domain.MaxWindow-time.Hour)
	require.Equal(t, domain.MaxLimit, stored.Used)

	all, err := domain.NewCheckCost(huge, key, domain.MaxLimit)
	require.NoError(t, err)
	commit, d, _ = evaluateOne(t, all, later, domain.Observation{Counter: stored})
	require.False(t, commit)
	requireDenied(t, d, domain.Denied, domain.QuotaExhausted, domain.MaxWindow-time.Hour, true)

	// The whole window has passed: renewed with the full limit.
	commit, d, _ = evaluateOne(t, all, stored.Expires, domain.Observation{Counter: stored})
	require.True(t, commit)
	requireAllowed(t, d, domain.MaxLimit, 0, domain.MaxWindow)
}

func TestBatchProtocolMisuse(t *testing.T) {
	t.Parallel()
	f := setup(t)

	cases := map[string]func(t *testing.T, b *domain.Batch) error{
		"Decision before Evaluate": func(t *testing.T, b *domain.Batch) error {
			b.Observe(0, domain.Observation{})
			b.Observe(1, domain.Observation{})
			_, err := b.Decision()
			return err
		},
		"Evaluate before any Observe": func(t *testing.T, b *domain.Batch) error {
			_, err := b.Evaluate(ms(1))
			return err
		},
		"Evaluate before every check is observed": func(t *testing.T, b *domain.Batch) error {
			b.Observe(1, domain.Observation{})
			_, err := b.Evaluate(ms(1))
			return err
		},
		"one check observed twice is not two": func(t *testing.T, b *domain.Batch) error {
			b.Observe(0, domain.Observation{})
			b.Observe(0, domain.Observation{})
			_, err := b.Evaluate(ms(1))
			return err
		},
		"Evaluate twice": func(t *testing.T, b *domain.Batch) error {
			b.Observe(0, domain.Observation{})
			b.Observe(1, domain.Observation{})
			commit, err := b.Evaluate(ms(1))
			require.NoError(t, err)
			require.True(t, commit)
			_, err = b.Evaluate(ms(1))
			return err
		},
		"Decision after a second Evaluate": func(t *testing.T, b *domain.Batch) error {
			b.Observe(0, domain.Observation{})
			b.Observe(1, domain.Observation{})
			_, _ = b.Evaluate(ms(1))
			_, _ = b.Evaluate(ms(1))
			_, err := b.Decision()
			return err
		},
		"Decision after a premature Evaluate": func(t *testing.T, b *domain.Batch) error {
			b.Observe(0, domain.Observation{})
			_, _ = b.Evaluate(ms(1))
			b.Observe(1, domain.Observation{})
			_, err := b.Decision()
			return err
		},
		"Evaluate after a premature Evaluate": func(t *testing.T, b *domain.Batch) error {
			b.Observe(0, domain.Observation{})
			_, _ = b.Evaluate(ms(1))
			b.Observe(1, domain.Observation{})
			_, err := b.Evaluate(ms(1))
			return err
		},
	}
	for name, misuse := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newBatch(t, f.check("a"), f.check("b"))
			require.ErrorIs(t, misuse(t, b), domain.ErrBatchProtocol)
		})
	}

	t.Run("zero Batch", func(t *testing.T) {
		t.Parallel()
		var b domain.Batch
		commit, err := b.Evaluate(ms(1))
		require.False(t, commit)
		require.ErrorIs(t, err, domain.ErrBatchProtocol)
		_, err = b.Decision()
		require.ErrorIs(t, err, domain.ErrBatchProtocol)
	})

	t.Run("observations after Evaluate are ignored", func(t *testing.T) {
		t.Parallel()
		b := newBatch(t, f.check("a"))
		commit, err := observeAndEvaluate(t, b, ms(1), domain.Observation{})
		require.NoError(t, err)
		require.True(t, commit)
		b.Observe(0, domain.Observation{Full: true})
		bd, err := b.Decision()
		require.NoError(t, err)
		require.Equal(t, domain.Allowed, bd.Outcome())
	})
}

func TestBatchDecisionsShareMemoryUntilCloned(t *testing.T) {
	t.Parallel()
	f := setup(t)

	b := newBatch(t, f.check("a"), f.check("b"))
	_, err := observeAndEvaluate(t, b, ms(1), domain.Observation{}, domain.Observation{})
	require.NoError(t, err)
	shared, err := b.Decision()
	require.NoError(t, err)
	cloned := shared.Clone()
	require.Equal(t, shared, cloned)

	// Reuse the batch: the clone keeps its values, the shared view does not.
	require.NoError(t, b.Reset([]domain.Check{f.check("c"), f.check("d")}, 0))
	used := domain.Observation{Counter: domain.Counter{Used: 3, Start: 0, Expires: ms(1000)}}
	_, err = observeAndEvaluate(t, b, ms(500), used, used)
	require.NoError(t, err)
	_, err = b.Decision()
	require.NoError(t, err)

	requireAllowed(t, cloned.Decisions()[0], 5, 4, time.Second)
	requireAllowed(t, cloned.Decisions()[1], 5, 4, time.Second)
	requireAllowed(t, shared.Decisions()[0], 5, 1, 500*time.Millisecond)
	cloned.Decisions()[0] = domain.Decision{}
	requireAllowed(t, shared.Decisions()[0], 5, 1, 500*time.Millisecond)
}

// between maps any v onto [lo, hi], so fuzzed inputs always build valid
// policies and counters.
func between(v, lo, hi int64) int64 {
	span := uint64(hi) - uint64(lo) + 1
	if span == 0 { // the whole int64 range
		return v
	}
	return lo + int64(uint64(v)%span)
}

// FuzzEvaluate evaluates one check of a random policy against a random valid
// counter at a random time and checks the window invariants.
func FuzzEvaluate(f *testing.F) {
	type seed struct {
		limit, windowMs, cost, used, start, length, now, earliest int64
		full, hasEarliest, shadow                                 bool
	}
	for _, s := range []seed{
		{limit: 5, windowMs: 1000, cost: 1, used: 0, now: 1_000_000},
		{limit: 5, windowMs: 1000, cost: 2, used: 4, start: 0, length: 1_000_000, now: 999_999},
		{limit: 5, windowMs: 1000, cost: 1, used: 5, start: 0, length: 1_000_000, now: 1_000_000},
		{limit: 5, windowMs: 1000, cost: 1, used: 5, start: 0, length: 1_000_000, now: -7, shadow: true},
		{limit: 1, windowMs: 1, cost: 1, used: 0, now: 5, full: true, earliest: 3, hasEarliest: true},
		{limit: 3, windowMs: 10, cost: 3, used: 2, start: 50, length: 100, now: 60, full: true},
		{limit: math.MaxInt64, windowMs: int64(domain.MaxWindow / time.Millisecond), cost: math.MaxInt64, used: math.MaxInt64, start: 1 << 61, length: math.MaxInt64, now: 1<<61 + 1},
		{limit: 7, windowMs: 60_000, cost: 1, used: 0, now: math.MaxInt64},
		{limit: 7, windowMs: 60_000, cost: 1, used: 0, now: math.MinInt64, full: true, earliest: math.MaxInt64, hasEarliest: true},
	} {
		f.Add(s.limit, s.windowMs, s.cost, s.used, s.start, s.length, s.now, s.earliest, s.full, s.hasEarliest, s.shadow)
	}

	hasher, err := domain.NewKeyHasher(testSecret)
	require.NoError(f, err)
	id, err := domain.NewPolicyID("fuzz")
	require.NoError(f, err)
	scope, err := domain.NewScopeID("evaluate")
	require.NoError(f, err)

	f.Fuzz(func(t *testing.T, limit, windowMs, cost, used, start, length, rawNow, earliest int64, full, hasEarliest, shadow bool) {
		// Stores' clocks stay within ±2^62 µs (146,000 years) of their
		// epoch; beyond that now+window saturates. Every invariant but the
		// validity of the persisted state is also checked at the raw time.
		const realistic = 1 << 62
		limit = between(limit, 1, domain.MaxLimit)
		window := time.Duration(between(windowMs, 1, int64(domain.MaxWindow/time.Millisecond))) * time.Millisecond
		cost = between(cost, 1, limit)
		var counter domain.Counter
		if used = between(used, 0, limit); used > 0 {
			s := domain.Instant(between(start, -realistic, realistic))
			span := between(length, 1, int64(window/time.Microsecond))
			counter = domain.Counter{Used: used, Start: s, Expires: s + domain.Instant(span)}
		}
		obs := domain.Observation{Counter: counter, Full: full, EarliestExpiry: domain.Instant(earliest), HasEarliestExpiry: hasEarliest}
		mode := domain.Enforce
		if shadow {
			mode = domain.Shadow
		}
		p, err := domain.NewPolicy(id, scope, limit, window)
		require.NoError(t, err)
		p, err = p.WithMode(mode)
		require.NoError(t, err)
		check, err := domain.NewCheckCost(p, hasher.KeyString(p, "subject"), cost)
		require.NoError(t, err)

		times := []struct {
			now       domain.Instant
			realistic bool
		}{
			{domain.Instant(between(rawNow, -realistic, realistic)), true},
			{domain.Instant(rawNow), false},
		}
		for _, at := range times {
			now := at.now
			b := newBatch(t, check)
			commit, err := observeAndEvaluate(t, b, now, obs)
			require.NoError(t, err, "a valid counter is never corrupt")
			bd, err := b.Decision()
			require.NoError(t, err)
			d, ok := bd.Decision(0)
			require.True(t, ok)
			require.Equal(t, commit, d.Outcome() == domain.Allowed)

			// Evaluation is a pure function of its inputs: a denial that
			// is retried at the same time is denied again, identically.
			again := newBatch(t, check)
			commitAgain, err := observeAndEvaluate(t, again, now, obs)
			require.NoError(t, err)
			require.Equal(t, commit, commitAgain)
			bdAgain, err := again.Decision()
			require.NoError(t, err)
			require.Equal(t, bd.Clone(), bdAgain.Clone())

			active := counter.Active(now)
			switch d.Outcome() {
			case domain.Allowed:
				a, _ := d.Allowance()
				require.Equal(t, limit, a.Limit)
				require.GreaterOrEqual(t, a.Remaining, int64(0))
				require.Less(t, a.Remaining, limit)
				require.Positive(t, a.ResetAfter)
				require.LessOrEqual(t, a.ResetAfter, window)
				next := b.Next(0)
				require.LessOrEqual(t, next.Used, limit)
				require.Equal(t, limit-a.Remaining, next.Used)
				if active {
					require.Equal(t, domain.Counter{Used: used + cost, Start: counter.Start, Expires: counter.Expires}, next)
				} else {
					require.False(t, full && !counter.Present(), "an absent key in a full partition is never allowed")
					require.Equal(t, cost, next.Used)
					require.Equal(t, now, next.Start)
				}
				if at.realistic {
					// The persisted state is valid and reads back as active.
					require.True(t, next.Active(now))
					require.Equal(t, a.ResetAfter, next.Expires.Sub(max(now, next.Start)))
					b2 := newBatch(t, check)
					_, err := observeAndEvaluate(t, b2, now, domain.Observation{Counter: next})
					require.NoError(t, err)
				}
			case domain.Denied, domain.ShadowDenied:
				require.False(t, commit, "a denial persists nothing")
				require.Nil(t, bd.Decisions())
				den, _ := d.Denial()
				retry, hasRetry := den.RetryAfter()
				switch den.Reason() {
				case domain.QuotaExhausted:
					require.True(t, active)
					require.Greater(t, cost, limit-used)
					require.Equal(t, mode == domain.Shadow, d.Outcome() == domain.ShadowDenied)
					require.True(t, hasRetry)
					require.Positive(t, retry)
					require.LessOrEqual(t, retry, window)
					require.Equal(t, counter.Expires.Sub(max(now, counter.Start)), retry)
				case domain.StorageCapacity:
					require.Equal(t, domain.Denied, d.Outcome(), "capacity is never shadowed")
					require.False(t, counter.Present())
					require.True(t, full)
					require.Equal(t, hasEarliest, hasRetry)
					require.GreaterOrEqual(t, retry, time.Duration(0))
				default:
					t.Fatalf("unknown denial reason %v", den.Reason())
				}
			default:
				t.Fatalf("unknown outcome %v", d.Outcome())
			}
		}
	})
}
