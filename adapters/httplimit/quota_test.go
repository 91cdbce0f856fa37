package httplimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
)

func TestSortQuotas(t *testing.T) {
	t.Parallel()
	known := func(name string, remaining, cost int64, reset time.Duration) httplimit.Quota {
		return httplimit.Quota{Name: name, Known: true, Remaining: remaining, Cost: cost, Reset: reset}
	}
	unknown := func(name string) httplimit.Quota { return httplimit.Quota{Name: name, Cost: 1} }
	for _, tc := range []struct {
		name string
		in   []httplimit.Quota
		want []string
	}{
		{"fewest left first", []httplimit.Quota{known("a", 9, 1, time.Second), known("b", 1, 1, time.Second)}, []string{"b", "a"}},
		{"requests left, not units", []httplimit.Quota{known("units", 3, 1, 0), known("costly", 8, 4, 0)}, []string{"costly", "units"}},
		{"cost above remaining is none left", []httplimit.Quota{known("a", 0, 1, time.Second), known("b", 3, 4, 2*time.Second)}, []string{"b", "a"}},
		{"tie: longest wait first", []httplimit.Quota{known("short", 0, 1, time.Second), known("long", 0, 1, time.Minute)}, []string{"long", "short"}},
		{"tie: order kept", []httplimit.Quota{known("x", 2, 1, time.Second), known("y", 2, 1, time.Second)}, []string{"x", "y"}},
		{"unknown last, order kept", []httplimit.Quota{unknown("u1"), known("k", 50, 1, 0), unknown("u2")}, []string{"k", "u1", "u2"}},
		{"zero cost read as one", []httplimit.Quota{known("a", 5, 0, 0), known("b", 4, 1, 0)}, []string{"b", "a"}},
		{"empty", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			httplimit.SortQuotas(tc.in)
			var got []string
			for _, q := range tc.in {
				got = append(got, q.Name)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	q := func(remaining, cost int64, reset time.Duration, shadow bool) httplimit.Quota {
		return httplimit.Quota{Known: true, Remaining: remaining, Cost: cost, Reset: reset, Shadow: shadow}
	}
	for _, tc := range []struct {
		name      string
		quotas    []httplimit.Quota
		denial    time.Duration
		hasDenial bool
		want      int64
		ok        bool
	}{
		{"the denial rounded up", nil, 1500 * time.Millisecond, true, 2, true},
		{"a nanosecond is a second", nil, 1, true, 1, true},
		{"zero stays zero", nil, 0, true, 0, true},
		{"no denial, nothing exhausted", []httplimit.Quota{q(3, 1, time.Minute, false)}, 0, false, 0, false},
		{"an exhausted limit waits longer", []httplimit.Quota{q(0, 1, 50*time.Second, false)}, 10 * time.Second, true, 50, true},
		{"a limit with quota does not", []httplimit.Quota{q(1, 1, 50*time.Second, false)}, 10 * time.Second, true, 10, true},
		{"less than the cost left is exhausted", []httplimit.Quota{q(1, 2, 50*time.Second, false)}, 10 * time.Second, true, 50, true},
		{"a shadow limit never holds a client back", []httplimit.Quota{q(0, 1, 50*time.Second, true)}, 10 * time.Second, true, 10, true},
		{"unknown limits are not counted", []httplimit.Quota{{Remaining: 0, Cost: 1, Reset: time.Hour}}, 10 * time.Second, true, 10, true},
		{"capacity without retry, exhausted limit", []httplimit.Quota{q(0, 1, 7*time.Second, false)}, 0, false, 7, true},
		{"never below the t it covers", []httplimit.Quota{q(0, 1, 9500*time.Millisecond, false)}, 9 * time.Second, true, 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := httplimit.RetryAfterSeconds(tc.quotas, tc.denial, tc.hasDenial)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}
