package httplimit_test

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
)

func TestDraft11Fields(t *testing.T) {
	t.Parallel()
	minute := time.Minute
	for _, tc := range []struct {
		name       string
		quotas     []httplimit.Quota
		policy, rl string // "" means the field is absent
	}{
		{
			name:   "one allowed",
			quotas: []httplimit.Quota{{Name: "burst", Limit: 100, Window: minute, Cost: 1, Known: true, Remaining: 49, Reset: 37 * time.Second}},
			policy: `"burst";q=100;w=60`,
			rl:     `"burst";r=49;t=37`,
		},
		{
			name: "several in the order given",
			quotas: []httplimit.Quota{
				{Name: "a", Limit: 8, Window: minute, Known: true, Remaining: 0, Reset: 12 * time.Second},
				{Name: "b", Limit: 40, Window: minute, Known: true, Remaining: 39, Reset: minute},
			},
			policy: `"a";q=8;w=60, "b";q=40;w=60`,
			rl:     `"a";r=0;t=12, "b";r=39;t=60`,
		},
		{
			name: "RateLimit in the order given, RateLimit-Policy by rate",
			quotas: []httplimit.Quota{
				{Name: "a", Limit: 40, Window: minute, Known: true, Remaining: 0, Reset: 12 * time.Second},
				{Name: "b", Limit: 8, Window: minute, Known: true, Remaining: 7, Reset: minute},
			},
			policy: `"b";q=8;w=60, "a";q=40;w=60`,
			rl:     `"a";r=0;t=12, "b";r=7;t=60`,
		},
		{
			name: "a name given twice is written once, as the first quota with it",
			quotas: []httplimit.Quota{
				{Name: "api/client", Limit: 1000, Window: time.Hour, Known: true, Remaining: 999, Reset: time.Hour},
				{Name: "api/client", Limit: 10, Window: time.Second, Known: true, Remaining: 9, Reset: time.Second},
				{Name: "other", Limit: 5, Window: time.Second, Known: true, Remaining: 4, Reset: time.Second},
			},
			policy: `"api/client";q=1000;w=3600, "other";q=5;w=1`,
			rl:     `"api/client";r=999;t=3600, "other";r=4;t=1`,
		},
		{
			name: "unknown quota only in the policy field",
			quotas: []httplimit.Quota{
				{Name: "denied", Limit: 8, Window: minute, Known: true, Remaining: 0, Reset: time.Second},
				{Name: "unknown", Limit: 40, Window: minute},
			},
			policy: `"denied";q=8;w=60, "unknown";q=40;w=60`,
			rl:     `"denied";r=0;t=1`,
		},
		{
			name:   "nothing known: no RateLimit",
			quotas: []httplimit.Quota{{Name: "unknown", Limit: 40, Window: minute}},
			policy: `"unknown";q=40;w=60`,
		},
		{
			name:   "t and w round up",
			quotas: []httplimit.Quota{{Name: "x", Limit: 1, Window: 1500 * time.Millisecond, Known: true, Remaining: 1, Reset: 1001 * time.Millisecond}},
			policy: `"x";q=1;w=2`,
			rl:     `"x";r=1;t=2`,
		},
		{
			name:   "sub-second window is one second",
			quotas: []httplimit.Quota{{Name: "x", Limit: 5, Window: time.Millisecond, Known: true, Remaining: 4, Reset: time.Nanosecond}},
			policy: `"x";q=5;w=1`,
			rl:     `"x";r=4;t=1`,
		},
		{
			name:   "zero reset is t=0",
			quotas: []httplimit.Quota{{Name: "x", Limit: 5, Window: time.Second, Known: true, Remaining: 4}},
			policy: `"x";q=5;w=1`,
			rl:     `"x";r=4;t=0`,
		},
		{
			name:   "integers bounded",
			quotas: []httplimit.Quota{{Name: "x", Limit: 1 << 62, Window: 9_007_199_254_740 * time.Millisecond, Known: true, Remaining: 1_000_000_000_000_000, Reset: time.Duration(1<<63 - 1)}},
			policy: `"x";q=999999999999999;w=9007199255`,
			rl:     `"x";r=999999999999999;t=9223372037`,
		},
		{
			name:   "largest integer written as is",
			quotas: []httplimit.Quota{{Name: "x", Limit: 999_999_999_999_999, Window: time.Second, Known: true, Remaining: 999_999_999_999_998}},
			policy: `"x";q=999999999999999;w=1`,
			rl:     `"x";r=999999999999998;t=0`,
		},
		{
			name:   "negative numbers are zero",
			quotas: []httplimit.Quota{{Name: "x", Limit: -1, Window: -time.Second, Known: true, Remaining: -5, Reset: -time.Second}},
			policy: `"x";q=0`,
			rl:     `"x";r=0;t=0`,
		},
		{
			name:   "quotes and backslashes escaped",
			quotas: []httplimit.Quota{{Name: `a"b\c`, Limit: 1, Window: time.Second, Known: true}},
			policy: `"a\"b\\c";q=1;w=1`,
			rl:     `"a\"b\\c";r=0;t=0`,
		},
		{
			name: "a name that is no sf-string is left out",
			quotas: []httplimit.Quota{
				{Name: "evil\r\nSet-Cookie: x=1", Limit: 1, Window: time.Second, Known: true},
				{Name: "caf\u00e9", Limit: 1, Window: time.Second, Known: true},
				{Name: "", Limit: 1, Window: time.Second, Known: true},
				{Name: "ok", Limit: 2, Window: time.Second, Known: true, Remaining: 1},
			},
			policy: `"";q=1;w=1, "ok";q=2;w=1`,
			rl:     `"";r=0;t=0, "ok";r=1;t=0`,
		},
		{name: "no quotas: no fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			// Stale values from an earlier writer are replaced or removed.
			h.Set(httplimit.HeaderRateLimit, "stale")
			h.Set(httplimit.HeaderRateLimitPolicy, "stale")
			httplimit.Draft11{}.WriteFields(h, tc.quotas)
			require.Equal(t, fieldOrNil(tc.policy), h.Values("RateLimit-Policy"))
			require.Equal(t, fieldOrNil(tc.rl), h.Values("RateLimit"))
		})
	}
}

// RateLimit-Policy is ordered by what the policies allow, never by their
// state or the order they come in: every permutation of one set of quotas,
// with any remaining counts, writes the same field.
func TestDraft11PolicyOrder(t *testing.T) {
	t.Parallel()
	q := func(name string, limit, cost int64, window time.Duration) httplimit.Quota {
		return httplimit.Quota{Name: name, Limit: limit, Cost: cost, Window: window}
	}
	for _, tc := range []struct {
		name   string
		quotas []httplimit.Quota
		want   string
	}{
		{"lowest rate first", []httplimit.Quota{q("fast", 10, 1, time.Second), q("slow", 100, 1, time.Hour)},
			`"slow";q=100;w=3600, "fast";q=10;w=1`},
		{"rate counts requests, not units", []httplimit.Quota{q("units", 10, 1, time.Minute), q("costly", 30, 5, time.Minute)},
			`"costly";q=6;w=60, "units";q=10;w=60`},
		{"equal rates: fewer per window first", []httplimit.Quota{q("hour", 3600, 1, time.Hour), q("second", 1, 1, time.Second)},
			`"second";q=1;w=1, "hour";q=3600;w=3600`},
		{"equal policies: by name", []httplimit.Quota{q("b", 5, 1, time.Minute), q("a", 5, 1, time.Minute)},
			`"a";q=5;w=60, "b";q=5;w=60`},
		{"no window last", []httplimit.Quota{q("none", 1, 1, 0), q("some", 1<<62, 1, time.Millisecond)},
			`"some";q=999999999999999;w=1, "none";q=1`},
		{"largest values do not overflow", []httplimit.Quota{
			q("big", 1<<63-1, 1, 9_007_199_254_740*time.Millisecond), q("bigger", 1<<63-1, 1, 9_007_199_254_739*time.Millisecond)},
			`"big";q=999999999999999;w=9007199255, "bigger";q=999999999999999;w=9007199255`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, perm := range [][]httplimit.Quota{tc.quotas, {tc.quotas[1], tc.quotas[0]}} {
				h := http.Header{}
				httplimit.Draft11{}.WriteFields(h, perm)
				require.Equal(t, tc.want, h.Get("RateLimit-Policy"))
			}
		})
	}

	// Four quotas in every order, with counts that rank them differently
	// each time: one field.
	base := []httplimit.Quota{
		q("login/identity", 5, 1, time.Minute), q("login.trial/network", 10, 1, time.Minute),
		q("login/client", 20, 1, time.Minute), q("login.gate/network", 60, 1, time.Minute),
	}
	const want = `"login/identity";q=5;w=60, "login.trial/network";q=10;w=60, "login/client";q=20;w=60, "login.gate/network";q=60;w=60`
	seen := 0
	var permute func(k int)
	permute = func(k int) {
		if k == len(base) {
			qs := append([]httplimit.Quota(nil), base...)
			for i := range qs {
				qs[i].Known, qs[i].Remaining, qs[i].Reset = i%2 == 0, int64(i), time.Duration(i)*time.Second
			}
			h := http.Header{}
			httplimit.Draft11{}.WriteFields(h, qs)
			require.Equal(t, want, h.Get("RateLimit-Policy"))
			seen++
			return
		}
		for i := k; i < len(base); i++ {
			base[k], base[i] = base[i], base[k]
			permute(k + 1)
			base[k], base[i] = base[i], base[k]
		}
	}
	permute(0)
	require.Equal(t, 24, seen)
}

func fieldOrNil(v string) []string {
	if v == "" {
		return nil
	}
	return []string{v}
}

func TestSFString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, out string
		ok      bool
	}{
		{"", `""`, true},
		{"auth.login/client", `"auth.login/client"`, true},
		{" ~", `" ~"`, true},
		{`"`, `"\""`, true},
		{`\`, `"\\"`, true},
		{"\x1f", "", false},
		{"\x7f", "", false},
		{"a\nb", "", false},
		{"\u00e9", "", false},
		{"\x00", "", false},
	} {
		got, ok := httplimit.AppendSFString([]byte("prefix:"), tc.in)
		require.Equal(t, tc.ok, ok, "%q", tc.in)
		if ok {
			require.Equal(t, "prefix:"+tc.out, string(got), "%q", tc.in)
		} else {
			require.Equal(t, "prefix:", string(got), "%q: nothing appended", tc.in)
		}
	}
}

func TestSFInteger(t *testing.T) {
	t.Parallel()
	for in, want := range map[int64]string{
		0: "0", 1: "1", -1: "0", -1 << 63: "0", 999_999_999_999_999: "999999999999999",
		1_000_000_000_000_000: "999999999999999", 1<<63 - 1: "999999999999999",
	} {
		require.Equal(t, want, string(httplimit.AppendSFInteger(nil, in)), "%d", in)
	}
}

func TestCeilSeconds(t *testing.T) {
	t.Parallel()
	for in, want := range map[time.Duration]int64{
		0: 0, -time.Second: 0, 1: 1, time.Second: 1, time.Second + 1: 2,
		1001 * time.Millisecond: 2, time.Minute: 60, 1<<63 - 1: 9223372037,
	} {
		require.Equal(t, want, httplimit.CeilSeconds(in), "%v", in)
	}
}

// parseSFString parses an sf-string as RFC 9651 section 4.2.5 does,
// returning the rest of the input.
func parseSFString(s string) (value, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", s, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i == len(s) || (s[i] != '"' && s[i] != '\\') {
				return "", s, false
			}
			b.WriteByte(s[i])
		case c == '"':
			return b.String(), s[i+1:], true
		case c < 0x20 || c > 0x7e:
			return "", s, false
		default:
			b.WriteByte(c)
		}
	}
	return "", s, false
}

// FuzzSFString: whatever the input, the writer either refuses it (exactly
// when it holds a byte outside printable ASCII) or writes an sf-string that
// parses back to the input and ends where it should.
func FuzzSFString(f *testing.F) {
	for _, s := range []string{"", "auth.login/client", `a"b\c`, "\r\n", "\u00e9", `\"`, "\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, ok := httplimit.AppendSFString(nil, s)
		printable := true
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] > 0x7e {
				printable = false
			}
		}
		require.Equal(t, printable, ok)
		if !ok {
			require.Empty(t, out)
			return
		}
		got, rest, parsed := parseSFString(string(out) + ";r=1")
		require.True(t, parsed, "%q", out)
		require.Equal(t, s, got)
		require.Equal(t, ";r=1", rest)
	})
}

// The fields the package documentation shows are the ones Draft11 writes
// for the login they describe: the identity limit denied with 37 s left,
// the client limit of an enclosing middleware with 39 requests left.
func TestDocumentedFieldsAreWritten(t *testing.T) {
	t.Parallel()
	quotas := []httplimit.Quota{
		{Name: "auth.login/identity", Limit: 8, Window: time.Minute, Cost: 1, Known: true, Remaining: 0, Reset: 37 * time.Second},
		{Name: "auth.login/client", Limit: 40, Window: time.Minute, Cost: 1, Known: true, Remaining: 39, Reset: time.Minute},
	}
	httplimit.SortQuotas(quotas)
	h := http.Header{}
	httplimit.Draft11{}.WriteFields(h, quotas)
	retry, ok := httplimit.RetryAfterSeconds(quotas, 37*time.Second, true)
	require.True(t, ok)
	want := map[string]string{
		"RateLimit-Policy": h.Get("RateLimit-Policy"),
		"RateLimit":        h.Get("RateLimit"),
		"Retry-After":      strconv.FormatInt(retry, 10),
	}
	for _, file := range []string{"doc.go", "draft11.go"} {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		shown := 0
		for _, line := range strings.Split(string(src), "\n") {
			name, value, found := strings.Cut(strings.TrimPrefix(line, "//\t"), ": ")
			if w, ok := want[name]; ok && found && strings.HasPrefix(line, "//\t") {
				require.Equal(t, w, value, "%s shows %s", file, name)
				shown++
			}
		}
		require.GreaterOrEqual(t, shown, 2, "%s shows both fields", file)
	}
}
