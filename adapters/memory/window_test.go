package memory_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
)

func TestFixedWindowSequence(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 4})
	c := f.check(policy(3, 10*time.Second), "subject")
	steps := []struct {
		at        time.Duration
		allowed   bool
		remaining int64         // allowed only
		left      time.Duration // reset after, or retry after
	}{
		{0, true, 2, 10 * time.Second},
		{time.Second, true, 1, 9 * time.Second},
		{2 * time.Second, true, 0, 8 * time.Second},
		{3 * time.Second, false, 0, 7 * time.Second},
		{9999 * time.Millisecond, false, 0, time.Millisecond},
		// The window is half-open: at its end a new one starts.
		{10 * time.Second, true, 2, 10 * time.Second},
		{19999 * time.Millisecond, true, 1, time.Millisecond},
	}
	for _, step := range steps {
		f.clock.Set(step.at)
		if step.allowed {
			a := f.allow(t, c)
			require.Equal(t, int64(3), a.Limit, "at %v", step.at)
			require.Equal(t, step.remaining, a.Remaining, "at %v", step.at)
			require.Equal(t, step.left, a.ResetAfter, "at %v", step.at)
		} else {
			require.Equal(t, step.left, retry(t, f.deny(t, c, domain.QuotaExhausted)), "at %v", step.at)
		}
	}
}

func TestDenialConsumesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 4})
	p := policy(5, time.Minute)
	key := f.hasher.KeyString(p, "subject")
	cost := func(n int64) domain.Check {
		c, err := domain.NewCheckCost(p, key, n)
		require.NoError(t, err)
		return c
	}
	require.Equal(t, int64(1), f.allow(t, cost(4)).Remaining)
	f.deny(t, cost(2), domain.QuotaExhausted)
	f.deny(t, cost(2), domain.QuotaExhausted)
	require.Equal(t, int64(0), f.allow(t, cost(1)).Remaining)
}

func TestShadowDenialConsumesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 4})
	p, err := policy(1, time.Minute).WithMode(domain.Shadow)
	require.NoError(t, err)
	c := f.check(p, "subject")
	f.allow(t, c)
	f.clock.Advance(time.Second)
	for range 2 {
		d, err := f.limiter.Check(context.Background(), c)
		require.NoError(t, err)
		require.Equal(t, domain.ShadowDenied, d.Outcome())
		require.True(t, d.PermitsRequest())
		den, _ := d.Denial()
		require.Equal(t, 59*time.Second, retry(t, den))
	}
}

func TestClockIsTruncatedToMilliseconds(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 4})
	c := f.check(policy(5, 10*time.Millisecond), "subject")
	f.clock.Set(1500 * time.Microsecond) // read as 1 ms: the window ends at 11 ms
	require.Equal(t, 10*time.Millisecond, f.allow(t, c).ResetAfter)
	f.clock.Set(10900 * time.Microsecond) // read as 10 ms
	require.Equal(t, time.Millisecond, f.allow(t, c).ResetAfter)
	f.clock.Set(11 * time.Millisecond)
	require.Equal(t, int64(4), f.allow(t, c).Remaining, "a new window at 11 ms")
}

func TestClockRegressionDoesNotRefill(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 4, Shards: 2})
	c := f.check(policy(1, 10*time.Second), "subject")
	f.clock.Set(5 * time.Second)
	f.allow(t, c)
	for _, step := range []struct {
		set, retry time.Duration
	}{
		{time.Second, 10 * time.Second}, // back to 1 s: still read as 5 s
		{-time.Hour, 10 * time.Second},
		{14 * time.Second, time.Second},
		{3 * time.Second, time.Second}, // back again: read as 14 s
	} {
		f.clock.Set(step.set)
		require.Equal(t, step.retry, retry(t, f.deny(t, c, domain.QuotaExhausted)), "clock at %v", step.set)
	}
	f.clock.Set(15 * time.Second)
	f.allow(t, c)
}

func TestBatchClockIsTheLatestOfItsShards(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 4, Shards: 2})
	p := policy(5, 10*time.Second)
	early, late := f.onShard(t, p, 0, 1)[0], f.onShard(t, p, 1, 1)[0]
	f.allow(t, early)
	f.clock.Set(4 * time.Second)
	f.allow(t, late) // shard 1 has seen 4 s
	f.clock.Set(time.Second)
	// Shard 0 has seen only 0 s, but a batch also touching shard 1 runs at
	// 4 s, and shard 0 keeps that time from then on.
	bd, err := f.limiter.CheckAll(context.Background(), []domain.Check{early, late})
	require.NoError(t, err)
	require.Equal(t, []time.Duration{6 * time.Second, 10 * time.Second}, resets(t, bd))
	require.Equal(t, 6*time.Second, f.allow(t, early).ResetAfter)
}

func TestPolicyChangesStartIndependentCounters(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 8})
	base := policy(2, time.Minute)
	f.allow(t, f.check(base, "subject"))
	f.allow(t, f.check(base, "subject"))
	f.deny(t, f.check(base, "subject"), domain.QuotaExhausted)
	for name, p := range map[string]domain.Policy{
		"limit":     policy(3, time.Minute),
		"window":    policy(2, 2*time.Minute),
		"scope":     domain.MustPolicy("test.memory", "other", 2, time.Minute),
		"policy id": domain.MustPolicy("test.other", "subject", 2, time.Minute),
	} {
		a := f.allow(t, f.check(p, "subject"))
		require.Equal(t, p.Limit()-1, a.Remaining, name)
	}
	f.deny(t, f.check(base, "subject"), domain.QuotaExhausted)
}

func TestLargestLimitAndWindowDoNotOverflow(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Duration{0, 100 * 365 * 24 * time.Hour, math.MaxInt64} {
		t.Run(at.String(), func(t *testing.T) {
			t.Parallel()
			f := setup(t, memory.Config{MaxKeys: 4})
			f.clock.Set(at)
			p := policy(domain.MaxLimit, domain.MaxWindow)
			one := f.check(p, "one")
			a := f.allow(t, one)
			require.Equal(t, domain.MaxLimit-1, a.Remaining)
			require.Equal(t, domain.MaxWindow, a.ResetAfter)

			all, err := domain.NewCheckCost(p, f.hasher.KeyString(p, "all"), domain.MaxLimit)
			require.NoError(t, err)
			a = f.allow(t, all)
			require.Equal(t, int64(0), a.Remaining)
			f.deny(t, f.check(p, "all"), domain.QuotaExhausted)

			// The first key takes the rest in one check.
			rest, err := domain.NewCheckCost(p, f.hasher.KeyString(p, "one"), domain.MaxLimit-1)
			require.NoError(t, err)
			require.Equal(t, int64(0), f.allow(t, rest).Remaining)
			require.Equal(t, domain.MaxWindow, retry(t, f.deny(t, one, domain.QuotaExhausted)))
		})
	}
}
