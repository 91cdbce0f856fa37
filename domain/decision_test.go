package domain_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()

	cases := []struct {
		retry time.Duration
		want  int64
	}{
		{math.MinInt64, 0},
		{-time.Second, 0},
		{0, 0},
		{time.Nanosecond, 1},
		{time.Microsecond, 1},
		{999 * time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + time.Nanosecond, 2},
		{1001 * time.Millisecond, 2},
		{59*time.Second + 500*time.Millisecond, 60},
		{time.Minute, 60},
		{domain.MaxWindow, 9_007_199_255},
		// 9223372036.854775807 s rounds up without wrapping.
		{math.MaxInt64, 9_223_372_037},
	}
	for _, tc := range cases {
		t.Run(tc.retry.String(), func(t *testing.T) {
			t.Parallel()
			d := domain.QuotaDenialAfter(tc.retry)
			s, ok := d.RetryAfterSeconds()
			require.True(t, ok)
			require.Equal(t, tc.want, s)
			exact, ok := d.RetryAfter()
			require.True(t, ok)
			require.Equal(t, tc.retry, exact, "the exact duration stays available")
		})
	}
}

func TestRetryAfterFromEvaluation(t *testing.T) {
	t.Parallel()
	f := setup(t)

	// A capacity denial whose earliest expiry is as far away as an Instant
	// can be: the duration saturates and rounds up without wrapping.
	_, d, _ := evaluateOne(t, f.check("s"), math.MinInt64, domain.Observation{Full: true, EarliestExpiry: math.MaxInt64, HasEarliestExpiry: true})
	den, ok := d.Denial()
	require.True(t, ok)
	exact, ok := den.RetryAfter()
	require.True(t, ok)
	require.Equal(t, time.Duration(math.MaxInt64), exact)
	s, ok := den.RetryAfterSeconds()
	require.True(t, ok)
	require.Equal(t, int64(9_223_372_037), s)

	// A capacity denial without a retry time has no seconds either.
	_, d, _ = evaluateOne(t, f.check("s"), ms(1), domain.Observation{Full: true})
	den, ok = d.Denial()
	require.True(t, ok)
	s, ok = den.RetryAfterSeconds()
	require.False(t, ok)
	require.Zero(t, s)

	// A quota denial one microsecond before expiry asks for a whole second.
	_, d, _ = evaluateOne(t, f.check("s"), ms(1000)-1, domain.Observation{Counter: domain.Counter{Used: 5, Start: 0, Expires: ms(1000)}})
	den, ok = d.Denial()
	require.True(t, ok)
	s, ok = den.RetryAfterSeconds()
	require.True(t, ok)
	require.Equal(t, int64(1), s)
}

func TestZeroDecisions(t *testing.T) {
	t.Parallel()

	var d domain.Decision
	require.Equal(t, domain.Outcome(0), d.Outcome())
	require.False(t, d.PermitsRequest())
	_, ok := d.Allowance()
	require.False(t, ok)
	_, ok = d.Denial()
	require.False(t, ok)

	var bd domain.BatchDecision
	require.False(t, bd.PermitsRequest())
	require.Zero(t, bd.Size())
	require.Nil(t, bd.Decisions())
	_, _, ok = bd.Denied()
	require.False(t, ok)
	for _, i := range []int{-1, 0, 1} {
		_, ok = bd.Decision(i)
		require.False(t, ok, "the zero BatchDecision has no decision %d", i)
	}
	require.Equal(t, bd, bd.Clone())
}

func TestDenialAccessors(t *testing.T) {
	t.Parallel()

	var zero domain.Denial
	require.Equal(t, domain.DenialReason(0), zero.Reason())
	_, ok := zero.RetryAfter()
	require.False(t, ok)

	d := domain.QuotaDenialAfter(3 * time.Second)
	require.Equal(t, domain.QuotaExhausted, d.Reason())
}

func TestOutcomeAndReasonStrings(t *testing.T) {
	t.Parallel()
	require.Equal(t, "allowed", domain.Allowed.String())
	require.Equal(t, "denied", domain.Denied.String())
	require.Equal(t, "shadow-denied", domain.ShadowDenied.String())
	require.Equal(t, "unknown", domain.Outcome(0).String())
	require.Equal(t, "quota", domain.QuotaExhausted.String())
	require.Equal(t, "storage-capacity", domain.StorageCapacity.String())
	require.Equal(t, "unknown", domain.DenialReason(0).String())
}

func TestBatchDecisionClone(t *testing.T) {
	t.Parallel()
	f := setup(t)

	b := newBatch(t, f.check("a"))
	_, err := observeAndEvaluate(t, b, ms(1), domain.Observation{Counter: domain.Counter{Used: 5, Start: 0, Expires: ms(1000)}})
	require.NoError(t, err)
	denied, err := b.Decision()
	require.NoError(t, err)
	clone := denied.Clone()
	require.Equal(t, denied, clone)
	require.Nil(t, clone.Decisions())

	require.NoError(t, b.Reset([]domain.Check{f.check("a"), f.check("b")}, 0))
	_, err = observeAndEvaluate(t, b, ms(1), domain.Observation{}, domain.Observation{})
	require.NoError(t, err)
	allowed, err := b.Decision()
	require.NoError(t, err)
	clone = allowed.Clone()
	require.Equal(t, allowed, clone)
	require.NotSame(t, &allowed.Decisions()[0], &clone.Decisions()[0], "the clone has its own decisions")
}

func TestEnumsGoStringNameTheirConstants(t *testing.T) {
	t.Parallel()

	require.Equal(t, "domain.Allowed", fmt.Sprintf("%#v", domain.Allowed))
	require.Equal(t, "domain.ShadowDenied", fmt.Sprintf("%#v", domain.ShadowDenied))
	require.Equal(t, "domain.Outcome(9)", fmt.Sprintf("%#v", domain.Outcome(9)))
	require.Equal(t, "domain.StorageCapacity", fmt.Sprintf("%#v", domain.StorageCapacity))
	require.Equal(t, "domain.DenialReason(0)", fmt.Sprintf("%#v", domain.DenialReason(0)))
	require.Equal(t, "domain.Shadow", fmt.Sprintf("%#v", domain.Shadow))
	require.Equal(t, "domain.Mode(7)", fmt.Sprintf("%#v", domain.Mode(7)))
}
