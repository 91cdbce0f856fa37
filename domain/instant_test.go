package domain_test

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

const (
	maxInstant = domain.Instant(math.MaxInt64)
	minInstant = domain.Instant(math.MinInt64)
	// maxMicros is the largest whole number of microseconds a Duration holds.
	maxMicros = math.MaxInt64 / int64(time.Microsecond)
)

func TestInstantAdd(t *testing.T) {
	t.Parallel()

	cases := []struct {
		name string
		i    domain.Instant
		d    time.Duration
		want domain.Instant
	}{
		{"zero", 0, 0, 0},
		{"one microsecond", 10, time.Microsecond, 11},
		{"sub-microsecond is truncated", 10, 999 * time.Nanosecond, 10},
		{"negative sub-microsecond truncates toward zero", 10, -999 * time.Nanosecond, 10},
		{"negative", 10, -3 * time.Microsecond, 7},
		{"MaxWindow", 0, domain.MaxWindow, 9_007_199_254_740_000},
		{"longest duration", 0, math.MaxInt64, domain.Instant(maxMicros)},
		{"most negative duration", 0, math.MinInt64, -domain.Instant(maxMicros)},
		{"reaches the maximum exactly", maxInstant - 1, time.Microsecond, maxInstant},
		{"saturates at the maximum", maxInstant - 1, 2 * time.Microsecond, maxInstant},
		{"maximum plus a microsecond", maxInstant, time.Microsecond, maxInstant},
		{"maximum plus the longest duration", maxInstant, math.MaxInt64, maxInstant},
		{"maximum minus the longest duration", maxInstant, math.MinInt64, maxInstant - domain.Instant(maxMicros)},
		{"reaches the minimum exactly", minInstant + 1, -time.Microsecond, minInstant},
		{"saturates at the minimum", minInstant + 1, -2 * time.Microsecond, minInstant},
		{"minimum minus the longest duration", minInstant, math.MinInt64, minInstant},
		{"minimum plus the longest duration", minInstant, math.MaxInt64, minInstant + domain.Instant(maxMicros)},
		{"maximum plus a nanosecond", maxInstant, time.Nanosecond, maxInstant},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.i.Add(tc.d))
		})
	}
}

func TestInstantSub(t *testing.T) {
	t.Parallel()

	cases := []struct {
		name string
		i, j domain.Instant
		want time.Duration
	}{
		{"zero", 0, 0, 0},
		{"one microsecond", 11, 10, time.Microsecond},
		{"negative", 10, 11, -time.Microsecond},
		{"largest exact difference", domain.Instant(maxMicros), 0, time.Duration(maxMicros) * time.Microsecond},
		{"one microsecond too far saturates", domain.Instant(maxMicros + 1), 0, math.MaxInt64},
		{"largest exact negative difference", -domain.Instant(maxMicros), 0, -time.Duration(maxMicros) * time.Microsecond},
		{"one microsecond too far below saturates", -domain.Instant(maxMicros + 1), 0, math.MinInt64},
		{"maximum minus minimum", maxInstant, minInstant, math.MaxInt64},
		{"minimum minus maximum", minInstant, maxInstant, math.MinInt64},
		{"maximum minus minus one", maxInstant, -1, math.MaxInt64},
		{"minimum minus one", minInstant, 1, math.MinInt64},
		{"maximum minus maximum", maxInstant, maxInstant, 0},
		{"minimum minus minimum", minInstant, minInstant, 0},
		{"maximum minus zero", maxInstant, 0, math.MaxInt64},
		{"zero minus maximum", 0, maxInstant, math.MinInt64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.i.Sub(tc.j))
		})
	}
}

func TestInstantOf(t *testing.T) {
	t.Parallel()

	cases := []struct {
		d    time.Duration
		want domain.Instant
	}{
		{0, 0},
		{999 * time.Nanosecond, 0},
		{time.Microsecond, 1},
		{time.Microsecond + 999*time.Nanosecond, 1},
		{time.Second, 1_000_000},
		{-time.Microsecond, -1},
		// Truncation is toward the earlier microsecond, also before the epoch.
		{-time.Nanosecond, -1},
		{-time.Microsecond - time.Nanosecond, -2},
		{math.MaxInt64, domain.Instant(maxMicros)},
		{math.MinInt64, -domain.Instant(maxMicros) - 1},
	}
	for _, tc := range cases {
		t.Run(tc.d.String(), func(t *testing.T) {
			t.Parallel()
			got := domain.InstantOf(tc.d)
			require.Equal(t, tc.want, got)
			require.LessOrEqual(t, got.Sub(0), tc.d, "never later than the duration")
		})
	}
}

func TestInstantFromTime(t *testing.T) {
	t.Parallel()

	cases := []struct {
		name string
		t    time.Time
		want domain.Instant
	}{
		{"epoch", time.Unix(0, 0), 0},
		{"nanoseconds are truncated", time.Unix(1, 1999), 1_000_001},
		{"before the epoch, toward the earlier microsecond", time.Unix(-1, 999_999_999), -1},
		{"a date", time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC), 1_893_553_445_000_006},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := domain.InstantFromTime(tc.t)
			require.Equal(t, tc.want, got)
			require.True(t, got.Time().Equal(tc.t.Truncate(time.Microsecond)), "Time is the inverse, to the microsecond")
		})
	}
}

// clampInt64 saturates a big integer to the int64 range.
func clampInt64(v *big.Int) int64 {
	switch {
	case v.Cmp(big.NewInt(math.MaxInt64)) > 0:
		return math.MaxInt64
	case v.Cmp(big.NewInt(math.MinInt64)) < 0:
		return math.MinInt64
	}
	return v.Int64()
}

// FuzzInstant checks Add and Sub against exact big-integer arithmetic: they
// saturate and never wrap.
func FuzzInstant(f *testing.F) {
	for _, seed := range [][2]int64{
		{0, 0}, {1, -1}, {math.MaxInt64, 1000}, {math.MinInt64, -1000}, {math.MaxInt64, math.MinInt64},
		{math.MinInt64, math.MaxInt64}, {maxMicros, 0}, {-maxMicros - 1, 0}, {math.MaxInt64 - 1, 999},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b int64) {
		i, j := domain.Instant(a), domain.Instant(b)

		// Add: b as a duration, truncated toward zero to microseconds.
		step := big.NewInt(b / int64(time.Microsecond))
		wantAdd := clampInt64(new(big.Int).Add(big.NewInt(a), step))
		require.Equal(t, domain.Instant(wantAdd), i.Add(time.Duration(b)))

		// Sub: the exact difference in nanoseconds, saturated.
		diff := new(big.Int).Sub(big.NewInt(a), big.NewInt(b))
		wantSub := clampInt64(diff.Mul(diff, big.NewInt(int64(time.Microsecond))))
		got := i.Sub(j)
		require.Equal(t, time.Duration(wantSub), got)
		if a >= b {
			require.GreaterOrEqual(t, got, time.Duration(0))
		} else {
			require.Less(t, got, time.Duration(0))
		}

		// InstantOf never lands after the duration it converts.
		require.LessOrEqual(t, domain.InstantOf(time.Duration(a)).Sub(0), time.Duration(a))
	})
}
